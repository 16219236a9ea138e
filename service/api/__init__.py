"""The HTTP API (FastAPI) and the process runtime it starts: ``create_app(settings)``."""
