"""Files goldwatch appends to or creates with personal data in them: whole-line appends that
survive a crash mid-write (:mod:`service.files.append_only`) and owner-only modes
(:mod:`service.files.private`). Shared by the domain (history, labelling) and the adapters in
``consumers`` (dead-letter files), so it lives below both."""
