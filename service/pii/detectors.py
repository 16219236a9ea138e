"""The personal-data detectors: for each type a pattern, a check that accepts or rejects a
match, and a gate that skips the scan when the text cannot hold one.

Each type, the placeholder :func:`service.pii.scrub.scrub` writes for it, and what is found:

============  ===============  =========================================================
type          placeholder      shape (after digit folding), check
============  ===============  =========================================================
``url``       ``<URL>``        ``scheme://`` or ``www.`` URL with userinfo (``user:pw@``)
                               or a secret parameter (``token``, ``key``, ``sig``, ``code``
                               ...), or a capability URL: a share link of a cloud drive
                               (:data:`SHARE_HOSTS`: Google Drive/Docs, Dropbox, OneDrive,
                               SharePoint, Box, WeTransfer, MEGA, iCloud; the first four
                               also without ``https://``) with a path, or any URL whose
                               path or query holds a random-looking token (24+ of
                               ``[A-Za-z0-9_-]`` mixing upper case, lower case and digits);
                               the WHOLE URL is replaced (paths carry tokens too)
``secret``    ``<SECRET>``     API keys by their vendors' prefixes: ``sk-``/``sk_``/
                               ``pk_``/``rk_`` (+ 16 chars, a digit among them), ``ghp_``
                               ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` ``github_pat_``,
                               ``xoxb-``/``xoxp-``..., ``AKIA``/``ASIA`` + 16, ``AIza``
                               + 35, ``glpat-``, ``hf_``; a credential after ``password:``,
                               ``pwd=``, ``pin:``, ``passcode:``, ``mot de passe :``,
                               ``contraseña:``, ``Passwort:`` (or ``password is`` + a word
                               with a digit), the cue kept (:data:`_CREDENTIAL`)
``email``     ``<EMAIL>``      ``local@label.tld``, up to two spaces around the ``@``;
                               Unicode (IDN) names accepted; written out: ``[at]``
                               ``(at)`` ``{at}`` ``<at>``, or `` at `` when the domain
                               says `` dot ``/``[dot]`` (``rahul dot v at gmail dot com``)
                               or is a mail provider after a handle-like name with a digit,
                               ``.`` or ``_`` (``rahul77 at gmail.com``; ``sign in at
                               outlook.com`` and ``rahul at gmail.com`` are kept); a name
                               written out before a plain ``@`` (``a dot b @ gmail.com``,
                               ``zoe [dot] quinlan@gmail.com``) whole; ``me at a dot b``
                               is no address when ``a dot b`` is the name of one
                               (``me at a dot b at gmail dot com``: ``me at`` is kept)
``upi``       ``<UPI>``        ``handle@psp`` with a dot-less PSP handle from
                               :data:`UPI_HANDLES` (``ybl``, ``okicici``, ``paytm`` ...)
``iban``      ``<IBAN>``       IBAN (ISO 13616): 2 upper-case letters, 2 check digits, 11-30
                               upper-case letters and digits, contiguous or in groups of 4
                               (``DE89 3704 0044 0532 0130 00``), whole; ISO 7064 mod-97
                               (:func:`~service.pii.checksums.iban_valid`): a mistyped one is
                               not an IBAN (its digits may still be a phone); in lower or
                               mixed case only within 24 characters after the word ``iban``
                               (``iban gb82 west 1234 5698 7654 32``); grouped any other way
                               (``DE89 370400440532013000``) in upper case at exactly its
                               country's length (:data:`IBAN_LENGTHS`)
``account``   ``<ACCOUNT>``    a bank account number after an account cue (``account``,
                               ``bank account``, ``acct``, ``a/c``, ``acc no``, ``khata``,
                               ``खाता``, then only link words: ``my account number is``,
                               ``acct no.``, ``mera khata number``, ``खाता संख्या``;
                               :data:`_ACCOUNT_CUE`): 6-18 digits, contiguous or in groups
                               of 2+ split by a space or ``-``; not an amount (``account
                               500000 rs``) nor a digit and zeros. The cue wins: 12 digits
                               are no Aadhaar, a Luhn-valid number no card after it
                               (:func:`_cued_account`); an IBAN is ``iban`` (mod 97)
``card``      ``<CARD>``       13-19 digits, contiguous or 4-4-4-4(-3) / 4-6-5 / 4-6-4
                               with one kind of separator; Luhn (ISO/IEC 7812-1 Annex B);
                               not after ``ISBN``; a following ``cvv 123``, ``exp 12/28``
                               goes with it
``aadhaar``   ``<AADHAAR>``    12 digits, contiguous or 4-4-4, whatever the check digit:
                               people mistype their Aadhaar number, and other 12-digit ids
                               (roll, account, application numbers) are personal too —
                               privacy wins over precision (:func:`verhoeff_valid` is kept
                               for callers that need UIDAI's own check)
``ssn``       ``<SSN>``        US SSN ``123-45-6789`` (dashes; area not 000/666/9xx,
                               group not 00, serial not 0000: SSA's never-issued ranges);
                               after an SSN cue (``ssn``, ``social security``, then only
                               link words: ``my ssn is``, ``ssn:``, ``social security no.``;
                               :data:`_SSN_CUE`) also ``123 45 6789`` and ``123456789``,
                               any range (``ssn 2023 rules`` is no SSN: 4 digits)
``pan``       ``<PAN>``        ``AAAAA1234A``: five letters, four digits, a letter, any
                               case; ``ABCDE 1234 F`` (space or ``-``) in upper case only
                               (the Income Tax Department's shape; the 4th letter, the
                               holder status, is not required: typos count)
``passport``  ``<PASSPORT>``   Indian passport: an upper-case letter but Q/X/Z and 7 digits
                               (``K8765432``, first digit not 0); after a passport cue
                               (``passport``, ``pasaporte``, ``passeport``, ``Reisepass``,
                               then only link words: ``my passport number is``;
                               :data:`_PASSPORT_CUE`) any 0-2 letters and 6-9 digits, any
                               case (``X12345678``, ``x1234567``, ``123456789``)
``voter_id``  ``<VOTER_ID>``   EPIC: 3 upper-case letters and 7 digits (``ABC1234567``)
                               — passport and EPIC shapes are kept after a code word
                               (``error``, ``code``, ``order``, ``ticket``, ``model`` ...,
                               :data:`_NOT_ID_AFTER`) and EPIC with a code prefix (``INV``,
                               ``ORD``, ``TXN``, ``ERR`` ..., :data:`_NOT_EPIC_PREFIXES`)
``ip``        ``<IP>``         IPv4 with octets 0-255 (not after ``version``, ``section``,
                               ``rule`` ...); IPv6 that :class:`ipaddress.IPv6Address`
                               accepts and that holds a digit
``phone``     ``<PHONE>``      Indian mobile (``+91``/``0091``/``91``/``0`` prefix, 10 digits
                               from 6-9, split 5-5, 4-6, 6-4, 3-7, 2-8 by a space or ``-``;
                               3-3-4, 4-3-3, 2-4-4, 3-4-3 by a space, ``.`` or ``-``;
                               4-4-2, 5-4-1 by a space or ``-``; 2-2-2-2-2 by ``-``;
                               ``(987) 654-3210``; one digit at a time
                               ``9 8 7 6 5 4 3 2 1 0``. Without a prefix, kept after ``Rs``,
                               ``INR``, ``₹``, ``$`` and as round figures (``85000-95000``);
                               4-6 ... 2-2-2-2-2 kept inside a longer run of numbers
                               (``78 85 92 88 90``)), Indian landline (11
                               digits with the 0 and STD code), North American (NANP, N is
                               2-9, area code not N11) with the area code in brackets
                               (``(415) 555-0100``) or not (``415-555-0100``,
                               ``415.555.0100``, ``415 555 0100``, ``415 555-0100``,
                               ``415-5550100``), ``+1``/``001``/``1`` first or not; without
                               brackets kept as round figures (``200-300-4000``) and inside a
                               longer run of numbers; ten bare digits (``4155550100``) kept
                               without a cue: roll numbers look the same), any bare run of
                               7-15 digits right after a phone cue (``call me on
                               4155550133``, ``my number is 12345678``; ``number`` alone is
                               no cue: ``what is the number 4155550133 in binary`` stays; a
                               digit and zeros is a figure: ``reach 100000000 users``),
                               international ``+cc``/``00cc``
                               with 8-15 digits (``+34 612 345 678``); Spanish 3-3-3 (``612
                               345 678``, ``-`` or ``.`` too, first digit 6-9) only after a
                               phone cue (``llámame al``, ``teléfono:``, ``mi número es``,
                               ``call me on``, ``my number is``, ``whatsapp`` ...): without
                               one a figure (``734 000 000``, a space separating thousands);
                               so are Spanish 3-2-2-2 (``612 98 76 54``) and 2-3-2-2 (``91
                               234 56 78``) and German landlines (``030 901820``, ``(0)30 901
                               820``, ``089/1234567``: 7-13 digits) after a cue (also
                               ``Telefon``, ``Handy``, ``Nummer``, ``ruf mich an unter``,
                               ``appelle-moi au``, ``portable``, ``numéro``); French ``0X XX
                               XX XX XX`` (one kind of separator) and ``06``/``07`` + 8 digits
                               with no cue: figures are not written so
``address``   ``<ADDRESS>``    a street address with its number: English ``42 Elm Street``,
                               ``221B Baker St``, ``1600 Pennsylvania Avenue NW, Suite 5``
                               (a number of 1-5 digits, one to three Title-case words, a
                               compass point or an ordinal, a street word from
                               :data:`_STREET_EN`; a unit, and a city with a UK or US
                               postcode after it, go with it); German ``Hauptstraße 5,
                               10115 Berlin``, ``Berliner Straße 12a``; Spanish ``Calle de
                               Alcalá, 23``; French ``12 rue de la Paix``. Kept: a year-like
                               number without a strong cue, a street word that is also an
                               ordinary word (Drive, Way, Court…) without a cue, a number
                               after a Title-case word (a product, a title, a room), a
                               ``-platz``/``-weg`` compound without a German cue, a number
                               with a unit after it (:func:`_address`); a street without a
                               number, a postcode alone, lower-case street names
``name``      ``<NAME>``       a name a person gives of themselves after a cue: ``my name
                               is``, ``call me``, ``I am`` + Title-case words, ``mera
                               naam``, ``me llamo``, ``ich heiße`` ...
                               (:mod:`service.pii.names`); the cue is kept, the name
                               replaced (``my name is <NAME>``)
============  ===============  =========================================================

Detectors run in that order (:data:`_DETECTORS`, over one view of the text: :func:`_spans`); the
scrubber runs them on the folded text (:mod:`service.pii.fold`) and skips a span overlapping an
earlier one. Numbers glued to words, codes (``INV-``), decimals or longer digit groups are left
alone. Text with no digit, ``@``, ``://``, ``www.``, share host, an ``at``/``dot`` written
out, nor a ``:``/``=`` with a credential cue (``password``, ``pin`` ...) returns at once (the
fast path, :func:`_clean_fast`), so a secret key or id without any digit
is not looked for.
Kept on purpose (ordinary questions; ``tests/service/test_pii.py`` and ``test_pii_phone.py``
list more): ``order 12345678``, ``flight AI 302``, ``room B-204``, ``error code E1234567`` (a
code word before a passport shape), ``INV1234567``, ``ISBN 978-3-16-148410-0``, ``sign in at
outlook.com``, ``Rs 85000-95000``, ``fee 65000-85000``, ``e-9876543210`` (digits glued to a
code prefix: an id). Three numbers listed as ``60 1200 3456`` (2-4-4, first from 6-9, not all
round) cannot be told from a mobile number and are scrubbed: privacy over precision.
On the questions of CLINC150, BANKING77 (all splits), Hinglish-TOP (all splits) and NQ-open
dev (51,289 questions) none of the types added with ``secret``, ``upi``, ``ssn``,
``passport``, ``voter_id``, written-out e-mails, spaced PANs and mobiles, nor the mobile
splits and North American numbers (bracketed or not) added later, fires; nor does any phone
pattern on those and XQuAD's, SQuAD 2.0's and MultiHop-RAG's texts (81,357 in all,
``tests/service/test_pii_phone.py``).
:data:`service.records.PII_TYPES` is the fixed, bounded set of type names (a metric label's
values).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from typing import Protocol

from service.pii.checksums import iban_valid, luhn_valid
from service.pii.fold import _CF, _FORMAT_BMP
from service.pii.names import find_names, may_hold_name

#: Mail providers: ``name at gmail.com`` is an address even without ``dot`` or brackets.
MAIL_PROVIDERS = frozenset(
    "gmail googlemail yahoo ymail rocketmail hotmail outlook live msn aol icloud me mac "
    "protonmail proton pm rediffmail rediff zoho yandex gmx mail".split()
)
_SHARE_HINTS = ("google.com/", "dropbox.com/", "1drv.ms/", "onedrive.live.com/")
_SHARE = r"(?:drive|docs)\.google\.com/|(?:www\.)?dropbox\.com/|1drv\.ms/|onedrive\.live\.com/"
#: Anything that may start an item, for text that is not ASCII (digits in any script).
_TRIGGER = re.compile(r"\d|[@\uff20\ufe6b]|:/|\uff1a|www\.", re.IGNORECASE)
#: One character class (~6x cheaper a scan than :data:`_TRIGGER`'s alternation) holding every
#: character that may start a trigger, and the format characters of the BMP (astral ones are
#: stripped before the written-out ``at``/``dot`` hints are looked for).
_TRIGGER_CHAR = re.compile(f"[\\d@\uff20\ufe6b\uff1a:wW{_FORMAT_BMP}]")

_SECRET_NAMES = frozenset(
    "token access_token refresh_token id_token auth_token key api_key apikey sig signature "
    "password passwd pwd pass secret client_secret session sessionid session_id sid auth "
    "code otp jwt credential x-amz-signature x-amz-credential x-goog-signature".split()
)
_SECRET_SUFFIX = re.compile(r"[_.-](?:token|key|signature|secret|password|session)$")
_PARAM = re.compile(r"[?&#;]([^=&#;?\s]{1,64})=")
_USERINFO = re.compile(r"[a-z][a-z0-9+.\-]*://[^/?#\s]*@", re.IGNORECASE)
_URL_TAIL = ".,;:!?)]}'\""
#: Cloud-drive hosts whose links are capabilities: whoever holds the link reads the file.
SHARE_HOSTS = frozenset(
    "drive.google.com docs.google.com dropbox.com dl.dropboxusercontent.com 1drv.ms "
    "onedrive.live.com wetransfer.com we.tl mega.nz box.com app.box.com icloud.com "
    "photos.app.goo.gl drive.proton.me".split()
)
_SHARE_SUFFIXES = (".sharepoint.com", ".box.com")
_HOST_PATH = re.compile(
    r"(?:[a-z][a-z0-9+.\-]*://)?(?:[^/?#\s@]*@)?([^/?#\s:]+)(?::\d+)?(.*)", re.I
)
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{24,}")

_W = r"\w\u0300-\u036f\u0900-\u0dff"  # word characters, with Indic vowel signs and viramas
# A leading look-ahead on the first character makes the scan ~2x faster than the look-behinds.
_NUM_L = r"(?=[0-9+(])(?<![\w+])(?<!\w-)(?<!\d\.)"  # not glued to a word, code prefix, decimal
_NUM_R = r"(?!\w|\.\d)"
_GROUP_L = _NUM_L + r"(?<!/)(?<!\d[ -])"  # ... nor in a URL path, nor continuing a group
_GROUP_R = r"(?!\w|\.\d|[ -]\d)"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
#: A 10-digit Indian mobile number (first digit 6-9) after an optional ``+91``/``0091``/``91``/
#: ``0`` (group ``cc``), contiguous or split as people write it: 5-5 (`` `` or ``-``), 3-3-4
#: and 4-3-3 (any of `` ``, ``.``, ``-``), ``(987) 654-3210``, and (group ``more``, a whole run
#: of number groups only: :func:`_phone`) 2-8, 3-7, 4-6, 6-4 (`` `` or ``-``: a ``.`` would
#: read as a decimal point), 2-4-4 and 3-4-3 (one kind of separator), the rarer 4-4-2 and 5-4-1
#: (`` `` or ``-``) and 2-2-2-2-2 (``-`` only: spaced, it is a list of marks). Written after
#: the shared ``[6-9]\d``, the splits cost about what the three older ones did
#: (``benchmarks/bench_pii.py``).
_MOBILE = (
    r"(?P<cc>\(?(?:\+|00)91\)?[ -]?|91[ -]?|0[ -]?)?"
    r"(?P<body>\([6-9]\d{2}\)[ .-]?\d{3}[ .-]\d{4}"
    r"|[6-9]\d(?:\d{8}|\d{3}[ -]\d{5}|\d[ .-]\d{3}[ .-]\d{4}|\d\d[ .-]\d{3}[ .-]\d{3}"
    r"|(?P<more>[ -]\d{8}|\d[ -]\d{7}|\d\d[ -]\d{6}|\d{4}[ -]\d{4}"
    r"|(?P<s1>[ .-])\d{4}(?P=s1)\d{4}|\d(?P<s2>[ .-])\d{4}(?P=s2)\d{3}"
    r"|\d\d(?P<s3>[ -])\d{4}(?P=s3)\d\d|\d{3}(?P<s4>[ -])\d{4}(?P=s4)\d|(?:-\d\d){4})))"
)
#: A North American number with the area code in brackets (ITU-T E.164 country code 1, the
#: NANP's ``(NXX) NXX-XXXX``: area code and exchange start with 2-9), ``+1``/``001``/``1`` first
#: or not: ``(415) 555-0100``, ``+1 (415) 555-0100``, ``(415)555.0100``.
_NANP = r"(?:(?:\+|00)?1[ .-]?)?\([2-9]\d{2}\)[ .-]?[2-9]\d{2}[ .-]?\d{4}"
#: A North American number without brackets: ``NXX-NXX-XXXX``, ``NXX.NXX.XXXX``, ``NXX NXX XXXX``,
#: ``NXX NXX-XXXX``, ``NXX-NXXXXXX`` (N is 2-9; the area code is not an N11 service code such
#: as 411 or 911), after ``+1``/``001``/``1-``/``1 ``/``1.`` or nothing (group ``nprefix``).
#: Matched only as a whole run of number groups (:data:`_GROUP_L`, :data:`_GROUP_R`), so
#: ``415-555-0100-2`` and ``marks 415 555 0100 92`` stay; :func:`_nanp` keeps round figures.
#: Ten bare digits (``4155550100``) are not matched: roll numbers (``2023001234``) look the same.
_NANP_BARE = (
    r"(?P<nprefix>(?:\+|00)1[ .-]?|1[ .-])?[2-9](?!11)\d\d"
    r"(?:(?P<ns>[ .-])[2-9]\d\d(?P=ns)\d{4}| [2-9]\d\d-\d{4}|-[2-9]\d{6})"
)
_URL = re.compile(
    rf"(?:\b[a-z][a-z0-9+.\-]{{1,15}}://|\bwww\.|(?<![\w.\-/]){_SHARE})[^\s<>\"'`{{}}|\\^]+",
    re.IGNORECASE,
)
_SECRET = re.compile(
    r"(?=[sprgxAh])(?<![\w\-])(?:[spr]k[_\-](?:(?:live|test|proj|ant|admin)[_\-])?"
    r"(?P<body>[A-Za-z0-9_\-]{16,})|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[\w\-]{35}"
    r"|glpat-[\w\-]{20,}|hf_[A-Za-z0-9]{30,})(?![\w\-])"
)
_EMAIL = re.compile(
    rf"(?<![{_W}.%+\-])[{_W}.%+\-]{{1,64}}+[ \t]{{0,2}}@[ \t]{{0,2}}(?:[{_W}\-]{{1,63}}+\.){{1,8}}"
    rf"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0dff]){{2,63}}(?![{_W}\-])"
)
# Possessive ``{m,n}+`` runs (Python 3.11): a word is never re-tried shorter, as what must
# follow it (``@``, ``.``, a space, a bracket) cannot be part of it: same matches, no backtracking.
_O_AT = r"(?:\s*[\[({<]\s*at\s*[\])}>]\s*|\s+at\s+|[ \t]{0,2}@[ \t]{0,2})"
_O_DOT = r"(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\s+dot\s+|\.)"
_OBFUSCATED_EMAIL = re.compile(
    rf"(?<![\w.%+\-])[\w%+\-]{{1,64}}+(?:{_O_DOT}[\w%+\-]{{1,64}}+){{0,4}}(?P<at>{_O_AT})"
    rf"(?P<domain>(?:[\w\-]{{1,63}}+{_O_DOT}){{1,4}})[^\W\d_]{{2,24}}(?![\w\-])",
    re.IGNORECASE,
)
_DOT_WORD = re.compile(r"\bdot\b", re.IGNORECASE)
#: A written-out ``at`` right after a :data:`_OBFUSCATED_EMAIL` match: its domain may be the
#: name of the address that follows (:func:`_obfuscated_email`).
_AT_AFTER = re.compile(_O_AT, re.IGNORECASE)
#: Words before `` at `` that say where to write, not whose address it is (``reach me at
#: priya dot sharma at gmail dot com``): only these are refused as an address's name when a
#: written-out address follows (:func:`_obfuscated_email`); any other plain word is a name
#: (``email john at acme dot com at john dot doe at gmail dot com`` is two addresses, a review).
_NOT_AN_ADDRESS_NAME = frozenset(
    "me us him her them you mail email e-mail write reach contact ping message msg text "
    "find".split()
)
#: An address whose name is written out with `` dot ``/``[dot]``/``(dot)`` but whose ``@`` and
#: domain are not (``aaaaaaaa dot a0 @ gmail.com``, ``zoe [dot] quinlan@gmail.com``): scanned
#: before :data:`_EMAIL`, which would take ``a0 @ gmail.com`` alone and leave the first words.
_O_DOT_WORD = r"(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\s+dot\s+)"
_DOTTED_EMAIL = re.compile(
    rf"(?<![{_W}.%+\-])(?P<first>[{_W}.%+\-]{{1,64}}+)(?:{_O_DOT_WORD}[{_W}.%+\-]{{1,64}}+){{1,4}}"
    rf"[ \t]{{0,2}}@[ \t]{{0,2}}(?:[{_W}\-]{{1,63}}+\.){{1,8}}"
    rf"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0dff]){{2,63}}(?![{_W}\-])",
    re.IGNORECASE,
)

#: Words that start a phrase, not a domain (``at the dot com crash``).
_NOT_DOMAIN = frozenset("the a an this that my your our his her their its any some one".split())
_HINT_DOT = re.compile(r"\sdot\s|dot\s*[\])}>]")
_HINT_BRACKET_AT = re.compile(r"[\[({<]\s*at\s*[\])}>]")
_HINT_AT_PROVIDER = re.compile(r"at\s+(?:" + "|".join(sorted(MAIL_PROVIDERS)) + r")\b")
#: UPI payment-service-provider handles (NPCI's published list, the common ones).
UPI_HANDLES = frozenset(
    "ybl ibl axl okicici oksbi okaxis okhdfcbank okbizaxis paytm ptyes ptaxis pthdfc ptsbi "
    "apl yapl rapl upi icici sbi hdfcbank axisbank axisb kotak kmbl pnb boi barodampay cnrb "
    "unionbank uboi idfcbank idfcfirst indus federal fbl rbl yesbank yesbankltd ikwik "
    "freecharge fam jupiteraxis airtel airtelpaymentsbank jio waicici waaxis wahdfcbank "
    "wasbi timecosmos abfspay dbs hsbc sc citi aubank equitas postbank ippb mahb centralbank "
    "iob indianbank allbank dlb kvb tjsb pingpay superyes naviaxis".split()
)
_UPI_HINT = re.compile(r"@[A-Za-z]{2,30}(?![\w\-@]|\.\w)")  # "@" first: a fast literal scan
_UPI = re.compile(r"(?<![\w.\-])[\w.\-]{2,256}+@(?P<psp>[a-z]{2,30})(?![\w\-@]|\.\w)", re.I)
#: An IBAN (ISO 13616): two upper-case letters, two check digits, 11-30 upper-case letters and
#: digits, contiguous or in groups of four split by single spaces (the last group shorter);
#: :func:`_iban` keeps only what passes the mod-97 check, the longest such prefix of the groups.
_IBAN = re.compile(
    r"(?=[A-Z]{2}\d\d)(?<![\w\-/])[A-Z]{2}\d\d(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}"
    r"(?: [A-Z0-9]{1,3})?|[A-Z0-9]{2}(?: [A-Z0-9]{4}){2,6}(?: [A-Z0-9]{1,4})?)(?![\w\-])"
)
#: The same shapes in any case, taken only after the word ``iban`` (:func:`_iban_cued`): people
#: type them in lower case (``iban gb82west12345698765432``: a trial found it stored as
#: written), but lower-case letters and digits in those shapes are common in other tokens, and
#: the mod-97 check alone passes one random string in 97.
_IBAN_ANY_CASE = re.compile(_IBAN.pattern, re.IGNORECASE)
#: How far before a lower-case IBAN its ``iban`` cue may be (``my iban is: gb82 ...``).
_IBAN_CUE_CHARS = 24
#: An IBAN grouped any other way (``DE89 370400440532013000``, ``DE89 3704 00440532013000``:
#: a trial found the first kept): letters and digits in runs split by single spaces.
#: :func:`_iban_registered` takes it only at the exact length the country's IBAN has
#: (:data:`IBAN_LENGTHS`) and with a valid mod-97 check, so a looser shape costs no precision.
_IBAN_GROUPED = re.compile(
    r"(?=[A-Z]{2}\d\d)(?<![\w\-/])[A-Z]{2}\d\d(?: ?[A-Z0-9]{1,30}){1,9}(?![\w\-])"
)
#: IBAN length per country code (the SWIFT IBAN registry, ISO 13616).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
_CARD = re.compile(
    _GROUP_L + r"(?:\d{13,19}|\d{4}(?P<s>[ -])(?:\d{4}(?P=s)\d{4}(?P=s)\d{4}(?:(?P=s)\d{3})?"
    r"|\d{6}(?P=s)\d{4,5}))" + _GROUP_R
)
_CARD_TAIL = re.compile(
    r"(?:[\s,;]{0,3}(?:cvv2?|cvc2?|cid|security code|exp(?:iry|ires|\.)?(?: date)?"
    r"|valid (?:thru|till|until))[\s:.\-]{0,3}(?:\d{1,2} ?/ ?\d{2,4}|\d{3,4})(?![\w/]))+",
    re.IGNORECASE,
)
_AADHAAR = re.compile(_GROUP_L + r"\d{4}(?P<s>[ -]?)\d{4}(?P=s)\d{4}" + _GROUP_R)
_PAN = re.compile(
    r"(?<!\w)(?:[A-Za-z]{5}\d{4}[A-Za-z]|[A-Z]{5}(?P<s>[ -]?)\d{4}(?P=s)[A-Z]"
    r"|[A-Z]{5}[ -]\d{4}[A-Z]|[A-Z]{5}\d{4}[ -][A-Z])(?!\w)"
)
_SSN = re.compile(_GROUP_L + r"(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}" + _GROUP_R)
_PASSPORT = re.compile(r"(?<![\w\-/])[A-PR-WY][1-9]\d{6}(?![\w\-])")
_EPIC = re.compile(r"(?<![\w\-/])[A-Z]{3}\d{7}(?![\w\-])")
#: A US SSN after its cue (:data:`_SSN_CUE`): three, two and four digits split by spaces or
#: not at all (``123 45 6789``, ``123456789``), a whole run of number groups; no range check
#: (what a user calls their SSN is personal, mistyped or not).
_CUED_SSN = re.compile(_GROUP_L + r"\d{3}(?P<s>[ -]?)\d{2}(?P=s)\d{4}" + _GROUP_R)
#: An SSN cue ending the text before a number: ``ssn``, ``social security``, then only link
#: words (``number``, ``no``, ``#``, ``is``, ``my`` ...) and punctuation.
_SSN_CUE = re.compile(
    r"(?<![\w<])(?:ssn|social\s+security)(?:[^\w\n]+(?:number|num|no|nr|is|was|my|card))*"
    r"[^\w\n]*$",
    re.IGNORECASE,
)
#: A passport number after its cue (:data:`_PASSPORT_CUE`): up to two letters and 6-9 digits,
#: any case (``X12345678``, ``x1234567``, a US ``123456789``): the Indian shape of
#: :data:`_PASSPORT` needs no cue, other countries' shapes do.
_CUED_PASSPORT = re.compile(r"(?<![\w\-/])[A-Za-z]{0,2}\d{6,9}(?![\w\-]|\.\d)")
#: A passport cue ending the text before a number: ``passport``, ``pasaporte``, ``passeport``,
#: ``Reisepass``, then only link words (``number``, ``no``, ``#``, ``is``, ``my`` ...).
_PASSPORT_CUE = re.compile(
    r"(?<![\w<])(?:passport|pasaporte|passeport|reisepass)"
    r"(?:[^\w\n]+(?:number|num|no|nr|is|was|my|id|es|est|ist|de|mi|mon|n[uú]mero|num[eé]ro"
    r"|nummer))*[^\w\n]*$",
    re.IGNORECASE,
)
#: A bank account number after its cue (:data:`_ACCOUNT_CUE`): 6-18 digits, contiguous or in
#: groups of 2+ split by single spaces or ``-`` (``5500 1234 5678 9010``, ``0123-456789``), a
#: whole run of number groups; :func:`_cued_account` counts the digits and keeps amounts.
_CUED_ACCOUNT = re.compile(_GROUP_L + r"\d{2,}(?:[ -]\d{2,}){0,8}" + _GROUP_R)
#: An account cue ending the text before a number: ``account``, ``bank account``, ``acct``,
#: ``a/c``, ``acc`` + ``no``/``number``, ``khata``, ``खाता``, then only link words (``number``,
#: ``no``, ``#``, ``is``, ``my``, Hinglish ``mera``/``hai``/``ka``, ``sankhya``, ``संख्या``,
#: ``नंबर``, ``details``, ``ending in`` ...) and punctuation. Not the plural (``accounts
#: 2019``), nor a cue with any other word before the number (``account for 25 percent``,
#: ``account balance 250000``): the window is the cue's own phrase, at most six link words
#: (``my account number is``, ``mera khata number hai``), as for the SSN and passport cues; a
#: free window of a few words would take amounts and counts (``account mein 50000 aaye``,
#: ``accounts opened 1200000``).
_ACCOUNT_CUE = re.compile(
    rf"(?<![{_W}<])(?:account|acct|a/c|khata|खाता|acc(?=[^\w\n]+(?:no|nr|num|number)\b))"
    rf"(?:[^{_W}\n]+(?:number|num|no|nr|is|was|my|id|details|ending(?:\s+(?:in|with))?"
    r"|mera|meri|mere|ka|ki|ke|hai|h|sankhya"
    rf"|sankhyaa|sankhiya|nambar|numbr|संख्या|नंबर|नम्बर|क्रमांक|है|का|की)(?![{_W}])){{0,6}}"
    rf"[^{_W}\n]*$",
    re.IGNORECASE,
)
#: After a cued number: a currency or unit, so it is an amount (``account 500000 rs``).
_AMOUNT_AFTER = re.compile(
    r"\s?(?:rs\b|rupees?\b|inr\b|usd\b|dollars?\b|euros?\b|lakhs?\b|lacs?\b|crores?\b"
    r"|k\b|%|₹|\$)",
    re.IGNORECASE,
)
_DIGIT_RUN = re.compile(r"[0-9]{4,}")


class _DigitAnchored:
    """Letters-then-digits ids (PAN, passport, EPIC), each pattern tried only where a run of
    exactly its number of ASCII digits starts ``offset`` characters later, right after a
    letter (or, for a ``spaced`` offset, after an upper-case letter and one space or ``-``):
    such runs are rare, so long text is not tried at every letter, and one scan of the digit
    runs serves every pattern. Same ``finditer`` as a compiled pattern (matches in order,
    never overlapping; look-behinds see the text before each start); ``m.re`` tells which."""

    def __init__(self, shapes: tuple[tuple[re.Pattern[str], int, int, bool], ...]) -> None:
        self.shapes = shapes  # (pattern, digit run length, offset, spaced)

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]:
        """Yield the matches of every shape, in text order."""
        free = 0  # the first index a new match may start at
        for run in _DIGIT_RUN.finditer(text, 1):
            at = run.start()
            length = run.end() - at
            before = text[at - 1]
            if before.isalpha():
                spaced = False
            elif before in " -" and at >= 2 and text[at - 2].isupper():
                spaced = True
            else:
                continue
            for pattern, digits, offset, after_space in self.shapes:
                if digits != length or after_space != spaced or at - offset < free:
                    continue
                m = pattern.match(text, at - offset)
                if m is not None:
                    free = m.end()
                    yield m
                    break


#: Words after which a letter-and-digits code is a code, not a passport or voter id.
_NOT_ID_AFTER = re.compile(
    r"(?:error|err|code|order|ticket|invoice|ref|sku|part|model|item|tracking|awb|bug|build"
    r"|serial|batch|flight|train|pnr|txn|transaction|utr)\W{0,3}(?:no\.?|number|#|id)?\W{0,3}$",
    re.IGNORECASE,
)
_NOT_EPIC_PREFIXES = frozenset(
    "INV ORD REF TXN ERR BUG REQ TKT SKU UTR PNR AWB SRN CRN APP ISO ISBN".split()
)
_IPV4 = re.compile(rf"(?=[0-9])(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\w|\.\d)")
#: Words after which a dotted quad or a Luhn-valid number is a version, section or ISBN.
_NOT_IP_AFTER = re.compile(
    r"(?:version|release|ver\.|section|sec\.|clause|rule|para|article|chapter|§)\s*$", re.I
)
_NOT_CARD_AFTER = re.compile(r"isbn(?:-1[03])?[\s:-]*$", re.IGNORECASE)
_IPV6 = re.compile(
    r"(?=[0-9a-f:])(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}"
    r"(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4})(?![\w:]|\.\d)",
    re.IGNORECASE,
)
_LANDLINE = r"\(?0[1-9]\d{1,3}\)?[ -]?\d{3,4}[ -]?\d{3,4}"
_INTL = r"(?:\+\(?|00)[1-9](?:[ .\-()]{0,2}\d){7,14}"
_PHONE = re.compile(
    rf"{_NUM_L}(?:(?P<mobile>{_MOBILE})|(?P<land>{_LANDLINE})|(?P<intl>{_INTL})){_NUM_R}"
)
#: Scanned on its own, only in text with a ``(``: as an alternative of :data:`_PHONE` it made
#: that scan ~14% slower on digit-rich text (``benchmarks/bench_pii.py``).
_NANP_PHONE = re.compile(rf"{_NUM_L}{_NANP}{_NUM_R}")
#: Scanned on its own: as an alternative of :data:`_PHONE` its groups would need that pattern's
#: group guards, which the mobile splits do not all take.
_NANP_BARE_PHONE = re.compile(rf"{_GROUP_L}{_NANP_BARE}{_GROUP_R}")
#: A Spanish number written 3-3-3 (``612 345 678``, ``612-345-678``, ``612.345.678``; mobiles
#: start with 6 or 7, landlines with 8 or 9), a whole run of number groups, kept unless a phone
#: cue comes right before it (:data:`_PHONE_CUE`, :func:`_cued_phone`): a space or a dot also
#: separates thousands (XQuAD's ``734 000 000``). With ``+34``/``0034`` it is :data:`_INTL`'s.
_ES_PHONE = re.compile(rf"{_GROUP_L}[6-9]\d\d(?P<s>[ .-])\d{{3}}(?P=s)\d{{3}}{_GROUP_R}")
#: Numbers only a phone cue tells from figures (:func:`_cued_phone`), each a whole run of number
#: groups: Spanish 3-2-2-2 (``612 98 76 54``, first digit 6-9) and landline 2-3-2-2 (``91 234
#: 56 78``, first digit 8-9); German landlines, the trunk ``0`` or ``(0)`` and an area code of
#: 2-5 digits, then one to three groups (``030 901820``, ``(0)30 901 820``, ``089/1234567``,
#: 7-13 digits in all: :func:`_cued_phone`). XQuAD's paragraphs space thousands the same way.
_CUED_PHONE = re.compile(
    rf"{_GROUP_L}(?:[6-9]\d\d(?P<t>[ .-])\d\d(?P=t)\d\d(?P=t)\d\d"
    rf"|[89]\d(?P<u>[ .-])\d{{3}}(?P=u)\d\d(?P=u)\d\d"
    rf"|(?P<de>(?:\(0\) ?|0)[1-9]\d{{1,4}}(?:[ /-]\d{{2,8}}){{1,3}}|0[1-9]\d{{6,12}})){_GROUP_R}"
)
#: A French mobile number (ARCEP's plan: ``06``/``07`` and eight digits), in five pairs with
#: one kind of separator (``06 12 34 56 78``, ``06.12.34.56.78``, ``06-12-34-56-78``) or ten
#: contiguous digits (``0612345678``). A whole run of number groups; no cue is needed. Other
#: prefixes (``01``-``05``, ``08``, ``09``) take a cue (:data:`_FR_LANDLINE`): "roll no 01 02 03
#: 04 05", "lottery numbers 05 12 23 34 45" and "marks 09.12.14.15.16" are lists (a review).
_FR_PHONE = re.compile(
    rf"{_GROUP_L}0[67](?:(?P<fs>[ .-])\d\d(?:(?P=fs)\d\d){{3}}|\d{{8}}){_GROUP_R}"
)
#: A French landline or service number in five pairs (``01 42 68 53 00``), after a phone cue
#: only (:func:`_cued_phone`).
_FR_LANDLINE = re.compile(rf"{_GROUP_L}0[1-589](?P<fl>[ .-])\d\d(?:(?P=fl)\d\d){{3}}{_GROUP_R}")
#: A phone cue ending the text before a number: ``llámame al``, ``mi número es el``,
#: ``teléfono:``, ``call me on``, ``my number is``, ``whatsapp``, ``tel.`` — a cue word, then
#: only short link words (``al``, ``es``, ``el``, ``on``, ``at``, ``is`` ...) and punctuation.
#: A placeholder is no cue (``<PHONE>``, ``<SSN>``, ``<PASSPORT>`` all three: ``(?<![\w<])``),
#: so a scrubbed item does not cue the next pass and ``scrub`` stays idempotent.
_PHONE_CUE = re.compile(
    r"(?<![\w<])(?:ll[aá]m(?:a|ame|eme|enme|anos|ar|arme)|tel[eé]fono|tel|tlf|tfno|m[oó]vil"
    r"|celular|whats\s?app|wasap|phone|call|mobile|cell|contact|contacto|text|ring|reach"
    r"|(?:my|mi|su|tu|your|our|nuestro)\s+(?:number|n[uú]mero)"
    r"|(?:telefon|rufnummer|handy|mobil)(?:nummer)?|nummer|anrufen|ruf(?:e|en|t)?|erreichbar"
    r"|appel(?:le|lez)|appeler|portable|num[eé]ro|t[eé]l[eé]phone|t[eé]l|joindre|fixe)"
    r"(?:[^\w\n]+(?:me|us|al|a|en|es|el|is|on|at|to|de|number|n[uú]mero|contacto"
    r"|unter|an|ist|lautet|mich|moi|au|le|la|est|mon|ma|sur))*"
    r"[^\w\n]*$",
    re.IGNORECASE,
)
#: A phone number written as one bare run of 7-15 digits (``4155550133``), kept unless a phone
#: cue comes right before it (:func:`_cued_bare_phone`): roll numbers, ids and figures look
#: the same, so ``what is the number 4155550133 in binary`` (``number`` alone is no cue) stays.
_BARE_PHONE = re.compile(_GROUP_L + r"\d{7,15}" + _GROUP_R)
#: A mobile number typed one digit at a time: ``9 8 7 6 5 4 3 2 1 0`` (one kind of separator).
_SPACED_MOBILE = re.compile(
    r"(?=[0-9+])(?<![\w+])(?<!\d[ .\-])(?:(?:\+|00)?91[ .\-]?)?"
    r"[6-9](?P<s>[ .\-])\d(?:(?P=s)\d){8}(?!\w|[ .\-]\d)"
)


#: English street words of :data:`_ADDRESS_EN` (Title case; the common ones in lower case too).
_STREET_EN = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl"
    "|Terrace|Crescent|Close|Square|Sq|Highway|Hwy|Parkway|Pkwy|Circle|Cir|Mews|Gardens"
)
_STREET_EN_LOWER = "street|st|avenue|ave|road|rd|lane|ln|boulevard|blvd"
#: Street words that are also ordinary words or names (``2 TB Hard Drive``, ``No Way Home``,
#: ``Supreme Court``, ``1st Place``): an address only after a cue (:data:`_ADDRESS_CUE`) or
#: at the start of the text.
_AMBIGUOUS_STREETS = frozenset(
    "drive dr way court ct place pl close square sq circle cir gardens mews terrace "
    "crescent".split()
)
#: A word of a street's name: Title case, a compass point, or an ordinal (``3rd``); no other
#: capitals (``2 TB Hard Drive``, ``9 AM Court`` are no streets).
_STREET_WORD = r"(?:[A-Z][a-z'\u2019]+|(?:NE|NW|SE|SW|N|S|E|W)\.?|\d{1,3}(?:st|nd|rd|th))"
#: A UK postcode (``NW1 6XE``) or a US state and ZIP code (``NY 10001``), after a city.
_POSTCODE = r"(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|[A-Z]{2}\s\d{5}(?:-\d{4})?)"
_ADDRESS_EN = re.compile(
    r"(?<![\w.,/#$\u20ac\u00a3-])(?P<num>\d{1,5}[A-Za-z]?)(?:-\d{1,5})?\s+"
    rf"(?:{_STREET_WORD}\s+){{1,3}}(?P<street>{_STREET_EN}|{_STREET_EN_LOWER})\b\.?"
    r"(?:\s+(?:NE|NW|SE|SW|N|S|E|W)\b\.?)?"
    r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|#)\.?\s*#?\w{1,6}\b)?"
    rf"(?:,?\s+[A-Z][a-z]+(?:\s[A-Z][a-z]+)?,?\s+{_POSTCODE}\b)?"
)
#: A number's unit after it: a count, a time or a distance, not a house number
#: (``Potsdamer Platz 10 Minuten``, ``Plaza de España, 3 horas``).
_UNIT_AFTER = (
    r"(?!\s*(?:Minuten|Min\b|Stunden|Std\b|Uhr|km|Kilometer|Meter|m\b|Jahre|Euro|Prozent|%"
    r"|horas|hora|minutos|min\b|metros|años|euros|kilómetros|°))"
)
#: German: a street word and its number (``Hauptstraße 5``, ``Berliner Straße 12a``), and a
#: following five-digit postcode with its town. A ``-platz``/``-weg`` compound only after a
#: cue (:data:`_DE_CUE`: ``Tabellenplatz 1``, ``Umweg 20`` are no addresses); a federal or
#: state road (``Bundesstraße 96``) is none; no determiner opens the adjective form (``Der
#: Platz 1``, ``Welcher Weg 3``).
_ADDRESS_DE = re.compile(
    r"(?<![\w-])(?!(?:Bundes|Land|Staats|Kreis)stra)"
    r"(?:(?P<street>[A-ZÄÖÜ][\wäöüß-]*?(?:straße|strasse|str\.|gasse|allee|damm|ufer))"
    r"|(?P<compound>[A-ZÄÖÜ][\wäöüß-]*?(?:platz|weg))"
    r"|(?!(?:Der|Die|Das|Den|Dem|Des|Jeder|Jede|Jedes|Welcher|Welche|Welches|Dieser|Diese"
    r"|Dieses|Aber|Oder|Immer|Wieder|Unser|Euer|Ihr|Mein|Dein|Sein|Kein|Einer|Eine|Ein)\s)"
    r"[A-ZÄÖÜ][\wäöüß]*(?:er|sche[rn]?)\s+(?:Straße|Strasse|Str\.|Weg|Gasse|Platz|Allee|Damm"
    r"|Ufer))\s+(?P<num>\d{1,4})(?:\s?[a-zA-Z](?!\w))?(?![\w.,]?\d)"
    + _UNIT_AFTER
    + r"(?:,?\s+\d{5}(?:\s+[A-ZÄÖÜ][\wäöüß-]+)?)?"
)
#: A German address cue ending the text before a ``-platz``/``-weg`` compound.
_DE_CUE = re.compile(
    r"\b(?:wohne|wohnt|wohnen|adresse|anschrift|an|am|in der|zur|zum|nach|bei|liefer\w*)\s*:?\s*$",
    re.IGNORECASE,
)
#: Spanish (and Catalan, Portuguese, French) street first, its number after.
_ADDRESS_ES = re.compile(
    r"(?<![\w-])(?:Calle|C/|Avenida|Avda\.?|Av\.|Plaza|Paseo|Carrer|Rua|Rue)\s+"
    r"(?:(?:de|del|la|las|los|el|du|des|d')\s+)*[A-ZÁÉÍÓÚÑÈ][\wáéíóúñèéê'-]*"
    r"(?:\s+(?:(?:de|del|la|las|los|el|du|des)\s+)?[A-ZÁÉÍÓÚÑÈ][\wáéíóúñèéê'-]*){0,3},?\s+"
    r"(?:n[º°o]\.?\s*|núm\.?\s*|#\s*)?(?P<num>\d{1,4})(?:\s?[a-zA-Z](?!\w))?(?![.,]?\d)"
    + _UNIT_AFTER
)
#: French: the number first (``12 rue de la Paix``, ``12 bis, avenue Victor Hugo``).
_ADDRESS_FR = re.compile(
    r"(?<![\w.,/-])(?P<num>\d{1,4})(?:\s?(?:bis|ter))?,?\s+"
    r"(?:rue|avenue|boulevard|bd|allée|impasse|quai)\s+"
    r"(?:(?:de la|de l'|du|des|de|d')\s*)?[A-ZÉÈ][\w'-]*(?:\s+[A-ZÉÈ-][\w'-]*){0,3}"
)
#: What every :data:`_ADDRESS_EN` match holds: a number, a space, a capital or an ordinal (a
#: cheap first scan: most numbers in questions are followed by a lower-case word or nothing).
_ADDRESS_HINT = re.compile(r"\d[A-Za-z]?(?:-\d{1,5})?\s+(?:[A-Z]|\d{1,3}(?:st|nd|rd|th)\b)")
#: Words that, ending the text before a house number, say an address follows: ``drive to 4
#: Privet Drive``, ``my address is …``, ``I live at …``.
_ADDRESS_CUE = re.compile(
    r"(?:\b(?:at|to|is|address|live|lives|living|ship|deliver|send|visit|near|à|au)|:)\s*$",
    re.IGNORECASE,
)
#: The stronger cues a year-like house number (1800-2099) needs (``What led to 1929 Wall
#: Street``, ``Timeline: 1929 Wall Street crash`` are history): ``ship to``, ``my address is``,
#: ``I live at``, ``deliver to``.
_YEAR_ADDRESS_CUE = re.compile(
    r"\b(?:at|address|live|lives|living|ship|deliver|send|visit|near|à|au)"
    r"(?:\s+(?:to|is|at))?\s*:?\s*$",
    re.IGNORECASE,
)
#: The word right before a number, when it is one (:func:`_address`).
_WORD_BEFORE = re.compile(r"(\S+)\s+$")


def _address(m: re.Match[str]) -> int | None:
    """Accept a street address (:data:`_ADDRESS_EN`, ``_DE``, ``_ES``, ``_FR``) unless:

    * its house number looks like a year (1800-2099) with no strong address cue in the 24
      characters before it (:data:`_YEAR_ADDRESS_CUE`: ``in 1945 Oxford Street``, ``the
      1978 Supreme Court case``, ``what led to 1929 Wall Street``; in German and Spanish,
      whose street comes first, never: ``Alexanderplatz 1989``, ``Plaza de Tiananmen 1989``);
    * (English) a Title-case word, or one holding a digit or ``-``, stands right before the
      number with no cue before it (:data:`_ADDRESS_CUE`): a product, a title or a room
      (``Mario Kart 8 Rainbow Road``, ``Chapter 7 Bankruptcy Court``, ``Room 101 Oxford
      Street``); a word ending a sentence or clause (``Thanks. 42 Elm Street``) does not count;
    * (English) its street word is also an ordinary word (:data:`_AMBIGUOUS_STREETS`: Drive,
      Way, Court, Place…) with neither a cue before it nor the text's start (``sync 2 Google
      Drive accounts``, ``the 9 Supreme Court justices``);
    * (German) a ``-platz``/``-weg`` compound with no German cue before it
      (:data:`_DE_CUE`: ``Tabellenplatz 1``; ``wohne am Marktplatz 3`` is one).
    """
    text, start = m.string, m.start()
    before = text[max(0, start - 24) : start]
    groups = m.re.groupindex
    number = m.group("num")
    if len(number) == 4 and number.isdigit() and 1800 <= int(number) <= 2099:
        if m.re is not _ADDRESS_EN and m.re is not _ADDRESS_FR:
            return None
        if _YEAR_ADDRESS_CUE.search(before) is None:
            return None
    if m.re is _ADDRESS_DE:
        if m.group("compound") and _DE_CUE.search(before) is None:
            return None
        return m.end()
    if m.re is not _ADDRESS_EN or "street" not in groups:
        return m.end()
    cued = _ADDRESS_CUE.search(before) is not None
    word = _WORD_BEFORE.search(before)
    if word is not None and not cued:
        previous = word.group(1)
        if previous[-1] not in ".,;:!?)" and (
            previous[0].isupper() or "-" in previous or any(c.isdigit() for c in previous)
        ):
            return None
    if m.group("street").lower() in _AMBIGUOUS_STREETS and not cued and text[:start].strip():
        return None
    return m.end()


def _digits(text: str) -> str:
    return "".join(c for c in text if "0" <= c <= "9")


def _capability(url: str) -> bool:
    """True if ``url`` is a cloud-drive share link with a path, or its path/query holds a
    random-looking token (24+ URL-safe characters mixing upper case, lower case, digits)."""
    parts = _HOST_PATH.match(url)
    if parts is None:  # pragma: no cover - the pattern matches any non-empty string
        return False
    host, rest = parts.group(1).lower().removeprefix("www."), parts.group(2)
    if (host in SHARE_HOSTS or host.endswith(_SHARE_SUFFIXES)) and len(rest.strip("/")) > 1:
        return True
    return any(
        any(c.isdigit() for c in token) and not token.islower() and not token.isupper()
        for token in _TOKEN.findall(rest)
    )  # digits and both cases: not a word, a slug, a hex hash or a date


def _url(m: re.Match[str]) -> int | None:
    url = m.group().rstrip(_URL_TAIL)
    names = (name.lower() for name in _PARAM.findall(url))
    secret = any(n in _SECRET_NAMES or _SECRET_SUFFIX.search(n) for n in names)
    if secret or _USERINFO.match(url) or _capability(url):
        return m.start() + len(url)
    return None


def _secret(m: re.Match[str]) -> int | None:
    body = m.group("body")
    return m.end() if body is None or any(c.isdigit() for c in body) else None


def _obfuscated_email(m: re.Match[str]) -> int | None:
    """Accept a written-out address (:func:`_written_out_address`) unless its name is one of
    :data:`_NOT_AN_ADDRESS_NAME` and its domain the name of an address written out after it:
    in ``reach me at
    priya dot sharma at gmail dot com``, ``me at priya dot sharma`` is refused (a trial
    stored ``Reach <EMAIL> at gmail dot com``), and :class:`_Retrying` goes on to find
    ``priya dot sharma at gmail dot com``. Any other name is kept, so a chain ``a dot b at
    c dot d at …`` is not refused link by link (a 100 kB one took 20x as long)."""
    end = _written_out_address(m)
    if end is None or _AT_AFTER.match(m.string, end) is None:
        return end
    if m.string[m.start() : m.start("at")].strip().lower() not in _NOT_AN_ADDRESS_NAME:
        return end
    inner = _OBFUSCATED_EMAIL.match(m.string, m.start("domain"))
    if inner is not None and inner.end() > end and _written_out_address(inner) is not None:
        return None
    return end


def _written_out_address(m: re.Match[str]) -> int | None:
    """Accept a written-out address: any with ``[at]``/``(at)``...; with a plain `` at ``, one
    whose domain says ``dot`` (not after ``the``, ``a`` ...: ``at the dot com bubble``) or
    names a mail provider after a handle-like name (a digit, ``.``, ``_`` or ``dot`` in it:
    ``sign in at outlook.com`` is kept, ``rahul.v at outlook.com`` is not)."""
    if m.group("at").strip().lower() != "at":
        return m.end()
    domain = m.group("domain")
    first = re.split(r"[\s.\[({<]", domain, maxsplit=1)[0].lower()
    if first in _NOT_DOMAIN:
        return None
    if _DOT_WORD.search(domain):
        return m.end()
    local = m.string[m.start() : m.start("at")]
    handle = any(c.isdigit() or c in "._" for c in local) or _DOT_WORD.search(local)
    return m.end() if first in MAIL_PROVIDERS and handle else None


def _iban(m: re.Match[str]) -> int | None:
    """Accept an IBAN that passes the ISO 7064 mod-97 check (:func:`iban_valid`): the whole
    match, else the longest run of its groups that does (``DE89 3704 0044 0532 0130 00 EUR``)."""
    text, start = m.string, m.start()
    ends = [m.end()] + [start + i for i in range(m.end() - start - 1, 14, -1) if text[i] == " "]
    for end in ends:
        compact = text[start:end].replace(" ", "")
        if 15 <= len(compact) <= 34 and iban_valid(compact):
            return end
    return None


def _iban_cued(m: re.Match[str]) -> int | None:
    """:func:`_iban` for an IBAN in any case (:data:`_IBAN_ANY_CASE`), when the word ``iban``
    ends at most :data:`_IBAN_CUE_CHARS` characters before it.

    >>> _iban_cued(_IBAN_ANY_CASE.search("pls refund to iban gb82west12345698765432 asap"))
    41
    >>> _iban_cued(_IBAN_ANY_CASE.search("ref gb82west12345698765432")) is None
    True
    """
    before = m.string[max(0, m.start() - _IBAN_CUE_CHARS - 4) : m.start()].lower()
    cue = before.rfind("iban")
    if cue < 0 or len(before) - (cue + 4) > _IBAN_CUE_CHARS:
        return None
    return _iban(m)


def _iban_registered(m: re.Match[str]) -> int | None:
    """Accept the longest run of a :data:`_IBAN_GROUPED` match's groups whose letters and
    digits are exactly as many as its country's IBAN has (:data:`IBAN_LENGTHS`) and pass the
    mod-97 check (upper case only: a lower-case one is taken by :func:`_iban_cued` when in
    four-character groups or contiguous).

    >>> text = "my IBAN is DE89 370400440532013000, can I transfer money?"
    >>> m = _IBAN_GROUPED.search(text); text[m.start():_iban_registered(m)]
    'DE89 370400440532013000'
    >>> _iban_registered(_IBAN_GROUPED.search("DE89 370400440532013001"))  # check digits fail
    >>> _iban_registered(_IBAN_GROUPED.search("ZZ89 370400440532013000"))  # no such country
    """
    text, start = m.string, m.start()
    length = IBAN_LENGTHS.get(text[start : start + 2])
    if length is None:
        return None
    ends = [m.end()] + [i for i in range(m.end() - 1, start + 4, -1) if text[i] == " "]
    for end in ends:
        compact = text[start:end].replace(" ", "")
        if len(compact) == length and iban_valid(compact):
            return end
    return None


def _dotted_email(m: re.Match[str]) -> int | None:
    """Accept a :data:`_DOTTED_EMAIL` match unless its first word starts a phrase (``the dot
    a0@gmail.com``: the address is ``a0@gmail.com``, which :data:`_EMAIL` takes)."""
    return None if m.group("first").lower() in _NOT_DOMAIN else m.end()


def _upi(m: re.Match[str]) -> int | None:
    return m.end() if m.group("psp").lower() in UPI_HANDLES else None


def _after(m: re.Match[str], words: re.Pattern[str], span: int = 12) -> bool:
    return words.search(m.string, max(0, m.start() - span), m.start()) is not None


def _card(m: re.Match[str]) -> int | None:
    if not luhn_valid(_digits(m.group())) or _after(m, _NOT_CARD_AFTER):
        return None
    tail = _CARD_TAIL.match(m.string, m.end())
    return m.end() if tail is None else tail.end()


def _letters_digits(m: re.Match[str]) -> int | None:
    """Accept a PAN; a passport or EPIC unless a code word or prefix says it is a code."""
    if m.re is _PAN:
        return m.end()
    if m.group()[:3] in _NOT_EPIC_PREFIXES or _after(m, _NOT_ID_AFTER, 24):
        return None
    return m.end()


_LETTERS_DIGITS = _DigitAnchored(
    ((_PAN, 4, 5, False), (_PAN, 4, 6, True), (_PASSPORT, 7, 1, False), (_EPIC, 7, 3, False))
)
#: The type of a :data:`_LETTERS_DIGITS` match, by the pattern that matched.
_KIND_OF: dict[re.Pattern[str], str] = {_PAN: "pan", _PASSPORT: "passport", _EPIC: "voter_id"}


def _ipv4(m: re.Match[str]) -> int | None:
    return None if _after(m, _NOT_IP_AFTER) else m.end()


def _ipv6(m: re.Match[str]) -> int | None:
    try:
        ipaddress.IPv6Address(m.group())
    except ValueError:
        return None
    return m.end() if any(c.isdigit() for c in m.group()) else None


#: Right before a number (one space at most): a currency, so the number is an amount
#: (``Rs 85000-95000``, ``₹ 9876543210``, ``INR.9876543210``).
_AMOUNT_BEFORE = re.compile(r"(?:\b(?:rs|inr)\.?|[₹$]) ?$", re.IGNORECASE)
_AMOUNT_ENDS = frozenset("sSrR.₹$")  # the last characters :data:`_AMOUNT_BEFORE` may end with
_NUMBER_BEFORE = re.compile(r"\d[ .-]$")
_NUMBER_AFTER = re.compile(r"[ .-]\d")


def _round_figures(split: str) -> bool:
    """True if ``split`` (a number split by spaces or ``-``) is round figures: each group does
    not start with 0 and ends in 0, in 00 when it has 3+ digits. Then it is a list or range of
    amounts or counts (``85000-95000``, ``6000 120000``, ``60 1200 3400``), not a phone
    number: a random mobile number split 5-5 is two such figures about once in 10^4 (9/10 x
    1/100 per group). A dot or a bracket in ``split`` says phone (figures are not listed so)."""
    if "." in split or "(" in split:
        return False
    return all(
        g[0] != "0" and g.endswith("00" if len(g) > 2 else "0") for g in re.findall(r"\d+", split)
    )


def _phone(m: re.Match[str]) -> int | None:
    """Accept a phone number. A mobile number is kept when it is an amount (after ``Rs``,
    ``INR``, ``₹``, ``$``), round figures (:func:`_round_figures`), or one of the newer
    groupings (:data:`_MOBILE`'s ``more``) inside a longer run of number groups (a list:
    ``marks 78 85 92 88 90``, a UUID's ``91793799-7867-4aa7``); one with a country or trunk
    prefix (``+91``, ``0``) is a phone whatever its digits."""
    mobile, cc, body, more = m.group("mobile", "cc", "body", "more")
    if mobile:
        text, start = m.string, m.start()
        if (
            more is not None
            and (
                _NUMBER_BEFORE.search(text, max(0, start - 2), start) is not None
                or _NUMBER_AFTER.match(text, m.end()) is not None
            )
            and (cc is None or cc.isdigit())
        ):  # "+91 ", "0-": a phone; "91": maybe a longer id
            return None
        if cc is not None:
            return m.end()
        if not body.isdigit() and body[-1] == "0" and _round_figures(body):
            return None
        before = text[max(0, start - 2) : start].rstrip(" ")  # ~7x cheaper than a search first
        if before[-1:] in _AMOUNT_ENDS and _AMOUNT_BEFORE.search(text, max(0, start - 6), start):
            return None
        return m.end()
    n = len(_digits(m.group()))
    if m.group("land"):
        return m.end() if n == 11 else None
    low = 10 if m.group().startswith("00") else 8
    return m.end() if low <= n - (2 if low == 10 else 0) <= 15 else None


_DIGIT_GROUP = re.compile(r"\d+")


def _nanp(m: re.Match[str]) -> int | None:
    """Accept a North American number (:data:`_NANP_BARE`) unless, with no prefix and no dot,
    every group ends in 0: a list or range of figures (``seats 240 360 1200``, ``200-300-4000``);
    a real number is so about once in 10^3 (1/10 per group)."""
    number = m.group()
    if m.group("nprefix") is None and "." not in number:
        if all(g.endswith("0") for g in _DIGIT_GROUP.findall(number)):
            return None
    return m.end()


def _whole(m: re.Match[str]) -> int | None:
    return m.end()


def _cued_phone(m: re.Match[str]) -> int | None:
    """Accept a number only a phone cue tells from a figure (:data:`_ES_PHONE`): the cue in
    the 40 characters before it (``llámame al 612 345 678``; ``734 000 000 habitantes``
    stays)."""
    start = m.start()
    if "de" in m.re.groupindex and m.group("de") and not 7 <= len(_digits(m.group())) <= 13:
        return None
    groups = re.findall(r"\d+", m.group())
    if len(groups) > 1 and all(set(g) == {"0"} for g in groups[1:]):
        return None  # "reach 700 000 000 users": a figure, whatever the cue
    return m.end() if _PHONE_CUE.search(m.string, max(0, start - 40), start) else None


def _cue_before(m: re.Match[str], cue: re.Pattern[str], span: int = 40) -> bool:
    """True if ``cue`` (anchored at its end with ``$``) ends right before ``m``, within the
    ``span`` characters before it."""
    return cue.search(m.string, max(0, m.start() - span), m.start()) is not None


def _cued_bare_phone(m: re.Match[str]) -> int | None:
    """Accept a bare digit run (:data:`_BARE_PHONE`) after a phone cue (:data:`_PHONE_CUE`)
    unless it is a round figure (``reach 100000000 users``: a digit, then zeros).

    >>> _cued_bare_phone(_BARE_PHONE.search("call me on 4155550133"))
    21
    >>> _cued_bare_phone(_BARE_PHONE.search("what is the number 4155550133 in binary")) is None
    True
    """
    if set(m.group()[1:]) == {"0"}:
        return None
    return m.end() if _cue_before(m, _PHONE_CUE) else None


def _cued_ssn(m: re.Match[str]) -> int | None:
    """Accept a 3-2-4 or 9-digit number (:data:`_CUED_SSN`) after an SSN cue (:data:`_SSN_CUE`).

    >>> _cued_ssn(_CUED_SSN.search("ssn: 123456789")), _cued_ssn(_CUED_SSN.search("id 123456789"))
    (14, None)
    """
    return m.end() if _cue_before(m, _SSN_CUE) else None


def _cued_account(m: re.Match[str]) -> int | None:
    """Accept 6-18 digits (:data:`_CUED_ACCOUNT`) after an account cue (:data:`_ACCOUNT_CUE`)
    unless a currency or unit follows (an amount: ``account hai 500000 rs``) or it is a digit
    and zeros (``account 1000000``: a figure). After the cue any such number is an account
    number, 12 digits too (an Aadhaar has no account cue) and one that passes the Luhn check
    (``account 50100123456789``: one account number in ten does): the cue wins, so this
    detector runs before ``card`` and ``aadhaar`` (:data:`_DETECTORS`); a card number without
    an account cue (``card 4111 1111 1111 1111``) stays ``card``.

    >>> _cued_account(_CUED_ACCOUNT.search("My account number is 40217788123 and"))
    32
    >>> _cued_account(_CUED_ACCOUNT.search("order no. 40217788123")) is None
    True
    """
    n = len(_digits(m.group()))
    if not 6 <= n <= 18 or set(m.group()[1:]) <= {"0", " ", "-"}:
        return None
    if _AMOUNT_AFTER.match(m.string, m.end()) is not None:
        return None
    return m.end() if _cue_before(m, _ACCOUNT_CUE) else None


def _cued_passport(m: re.Match[str]) -> int | None:
    """Accept a letters-and-digits or all-digit id (:data:`_CUED_PASSPORT`) after a passport
    cue (:data:`_PASSPORT_CUE`).

    >>> _cued_passport(_CUED_PASSPORT.search("passport X1234567 expired"))
    17
    >>> _cued_passport(_CUED_PASSPORT.search("order X1234567 expired")) is None
    True
    """
    return m.end() if _cue_before(m, _PASSPORT_CUE) else None


def _may_obfuscate(low: str) -> bool:
    """True if lower-cased ``low`` may hold an e-mail address written out: `` dot ``,
    ``(dot)``, ``[at]``, or `` at `` before a mail provider (substring tests first)."""
    if "dot" in low and _HINT_DOT.search(low) is not None:
        return True
    if " at " in low and _HINT_AT_PROVIDER.search(low) is not None:
        return True
    closing = "]" in low or ")" in low or "}" in low or ">" in low
    return closing and "at" in low and _HINT_BRACKET_AT.search(low) is not None


def _may_share(low: str) -> bool:
    """True if lower-cased ``low`` may hold a cloud-drive link written without a scheme."""
    return "/" in low and any(hint in low for hint in _SHARE_HINTS)


_Accept = Callable[[re.Match[str]], int | None]


class _Retrying:
    """A pattern whose rejected match must not hide a later one inside it: after ``accept``
    refuses a match, the search goes on from the character after its start (``finditer``
    would go on after its end). ``email me at j.weber (at) uni-a dot de``: ``me at j.weber``
    is a candidate the check refuses (no handle, no ``dot``), and the address inside it was
    never tried (a new user's trial). Yields only accepted matches; ``accept`` returns the
    match's own end or ``None``."""

    def __init__(self, pattern: re.Pattern[str], accept: _Accept) -> None:
        self.pattern, self.accept = pattern, accept

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]:
        """Yield the accepted matches in text order, never overlapping."""
        pos = 0
        while (m := self.pattern.search(text, pos)) is not None:
            end = self.accept(m)
            if end is None:
                pos = m.start() + 1
                continue
            yield m  # accept's end is the match's (``_obfuscated_email``)
            pos = max(end, m.start() + 1)


#: Matches anything (empty), so a name span can be handed out as an ``re.Match``.
_ANY = re.compile(r"(?s:.*)")


class _Names:
    """:func:`service.pii.names.find_names` as a detector: each self-introduced name as a
    match of exactly its span (``m.start()``, ``m.end()``). Its table gate has asked
    :func:`~service.pii.names.may_hold_name` already."""

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]:
        """Yield one match per name, in text order."""
        for start, end in find_names(text, checked=True):
            m = _ANY.match(text, start, end)
            if m is not None:
                yield m


#: A credential after its cue: ``password:``, ``passwd=``, ``pwd:``, ``pin:``, ``passcode:``,
#: ``mot de passe :``, ``contraseña:``, ``Passwort:``, ``Kennwort:`` (a ``:`` or ``=``, maybe
#: after ``is``/``est``/``es``/``ist``), or the same cue and ``is``/``est``/``es``/``ist`` with
#: no ``:`` when the word after it holds a digit (``my password is Hunter2``; ``my password is
#: wrong`` is kept). Only the credential is replaced, the cue kept (:class:`_Credentials`).
_CREDENTIAL = re.compile(
    r"(?<!\w)(?:pass(?:word|wd|code|wort)|pwd|pin|kennwort|mot de passe|contrase[ñn]a)"
    r"(?P<sep>(?:\s+(?:is|est|es|ist))?\s*[:=]|\s+(?:is|est|es|ist))[ \t]*"
    r"(?P<cred>[^\s\]\[(){}<>\"'`]{3,128})",
    re.IGNORECASE,
)
#: What follows a credential cue in a question about it, not a credential (a review found
#: ``PIN: how do I reset it?`` and ``my PIN is 4-digit`` scrubbed): a question or function word,
#: or a length (``4-digit``, ``6-digits``, ``8-character``).
_NOT_A_CREDENTIAL = re.compile(
    r"(?i:how|what|why|where|when|which|who|whom|whose|is|are|was|were|do|does|did|can|could"
    r"|should|would|will|the|a|an|my|your|our|not|no|and|or|for|to|of|in|on|reset|forgot"
    r"|forgotten|change|changed|required|rules|policy|help|please|wrong|incorrect|expired"
    r"|locked|blocked|qu[eé]|c[oó]mo|comment|wie|was|warum|\d+-?(?:digits?|characters?|chars?))"
)
_CREDENTIAL_HINTS = ("pass", "pwd", "pin", "kennwort", "contrase")
_CREDENTIAL_END = ".,;:!?"


def _may_hold_credential(low: str) -> bool:
    """True if lower-cased ``low`` names a password or PIN (substring tests)."""
    return any(hint in low for hint in _CREDENTIAL_HINTS)


class _Credentials:
    """:data:`_CREDENTIAL` as a detector: each credential as a match of exactly its span (the
    cue kept); a sentence's closing ``.``/``,``/``?``... is not part of it unless the credential
    would be shorter than 3 characters without it."""

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]:
        """Yield one match per credential, in text order."""
        for m in _CREDENTIAL.finditer(text):
            cred = m.group("cred")
            if ":" not in m.group("sep") and "=" not in m.group("sep"):
                if not any(c.isdigit() for c in cred):
                    continue
            if _NOT_A_CREDENTIAL.fullmatch(cred.rstrip(_CREDENTIAL_END)):
                continue  # "PIN: how do I reset it?", "my PIN is 4-digit"
            stripped = cred.rstrip(_CREDENTIAL_END)
            end = m.start("cred") + (len(stripped) if len(stripped) >= 3 else len(cred))
            found = _ANY.match(text, m.start("cred"), end)
            if found is not None:
                yield found


def _name_end(m: re.Match[str]) -> int | None:
    return m.end()


class _Finder(Protocol):
    """What a detector scans with: a compiled pattern or a :class:`_DigitAnchored`."""

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]: ...


_Gate = Callable[[str, str, int], bool]  # (folded text, lower-cased, ASCII digits) -> run?
#: (type, pattern, accept -> span end or None, gate), in priority order
_DETECTORS: tuple[tuple[str, _Finder, _Accept, _Gate], ...] = (
    ("url", _URL, _url, lambda s, low, n: "://" in s or "www." in low or _may_share(low)),
    ("secret", _SECRET, _secret, lambda s, low, n: n >= 1 and ("_" in s or "-" in s
                                                               or "AKIA" in s or "ASIA" in s
                                                               or "AIza" in s)),
    ("secret", _Credentials(), _name_end, lambda s, low, n: _may_hold_credential(low)),
    ("email", _Retrying(_DOTTED_EMAIL, _dotted_email), _whole,
     lambda s, low, n: "@" in s and "dot" in low),
    ("email", _EMAIL, _whole, lambda s, low, n: "@" in s),
    ("email", _Retrying(_OBFUSCATED_EMAIL, _obfuscated_email), _whole,
     lambda s, low, n: _may_obfuscate(low)),
    ("upi", _UPI, _upi, lambda s, low, n: "@" in s and _UPI_HINT.search(s) is not None),
    ("iban", _IBAN, _iban, lambda s, low, n: n >= 4),
    ("iban", _IBAN_ANY_CASE, _iban_cued, lambda s, low, n: n >= 4 and "iban" in low),
    ("iban", _IBAN_GROUPED, _iban_registered, lambda s, low, n: n >= 11),
    ("account", _CUED_ACCOUNT, _cued_account, lambda s, low, n: n >= 6 and _may_account(low)),
    ("card", _CARD, _card, lambda s, low, n: n >= 13),
    ("aadhaar", _AADHAAR, _whole, lambda s, low, n: n >= 12),
    ("ssn", _SSN, _whole, lambda s, low, n: n >= 9 and "-" in s),
    ("ssn", _CUED_SSN, _cued_ssn,
     lambda s, low, n: n >= 9 and ("ssn" in low or "social security" in low)),
    # pan, passport and voter_id in one scan of the digit runs; the type is _KIND_OF[m.re]
    ("pan", _LETTERS_DIGITS, _letters_digits, lambda s, low, n: n >= 4),
    ("passport", _CUED_PASSPORT, _cued_passport, lambda s, low, n: n >= 6 and _may_passport(low)),
    ("ip", _IPV6, _ipv6, lambda s, low, n: n >= 1 and s.count(":") >= 2),
    ("ip", _IPV4, _ipv4, lambda s, low, n: n >= 4 and s.count(".") >= 3),
    ("phone", _PHONE, _phone, lambda s, low, n: n >= 8),
    ("phone", _NANP_PHONE, _whole, lambda s, low, n: n >= 10 and "(" in s),
    ("phone", _NANP_BARE_PHONE, _nanp, lambda s, low, n: n >= 10),
    ("phone", _SPACED_MOBILE, _whole, lambda s, low, n: n >= 10),
    ("phone", _ES_PHONE, _cued_phone, lambda s, low, n: n >= 9),
    ("phone", _FR_PHONE, _whole, lambda s, low, n: n >= 10),
    ("phone", _FR_LANDLINE, _cued_phone, lambda s, low, n: n >= 10),
    ("phone", _CUED_PHONE, _cued_phone, lambda s, low, n: n >= 7),
    ("phone", _BARE_PHONE, _cued_bare_phone, lambda s, low, n: n >= 7),
    ("address", _ADDRESS_EN, _address,
     lambda s, low, n: n >= 1 and _ADDRESS_HINT.search(s) is not None),
    ("address", _ADDRESS_DE, _address, lambda s, low, n: n >= 1 and _may_be_de_street(low)),
    ("address", _ADDRESS_ES, _address, lambda s, low, n: n >= 1 and _may_be_es_street(s)),
    ("address", _ADDRESS_FR, _address, lambda s, low, n: n >= 1 and _may_be_fr_street(low)),
    ("name", _Names(), _name_end, lambda s, low, n: may_hold_name(low)),
)  # fmt: skip
_ASCII_DIGITS = b"0123456789"


def _may_account(low: str) -> bool:
    return "acc" in low or "a/c" in low or "khata" in low or "खाता" in low


def _may_passport(low: str) -> bool:
    return any(w in low for w in ("passport", "pasaporte", "passeport", "reisepass"))


def _may_be_de_street(low: str) -> bool:
    return any(w in low for w in ("stra", "str.", "weg", "gasse", "platz", "allee", "damm", "ufer"))


def _may_be_es_street(text: str) -> bool:
    return any(w in text for w in ("Calle", "C/", "Avenida", "Avda", "Av.", "Plaza", "Paseo",
                                   "Carrer", "Rua", "Rue"))  # fmt: skip


_FR_STREET = re.compile(r"\b(?:rue|avenue|boulevard|bd|allée|impasse|quai)\b")


def _may_be_fr_street(low: str) -> bool:
    return _FR_STREET.search(low) is not None


def _clean_fast(text: str) -> bool:
    """True if ``text`` surely holds nothing to scrub: no digit, ``@``, ``://``, ``www.``,
    share host, nor an ``at``/``dot`` written out (``[at]``, ``x dot com``, ``at gmail``);
    format characters (Cf) are looked through. The ASCII branch is inlined: it is the common
    event's whole cost."""
    if text.isascii():
        raw = text.encode("ascii")
        rare = len(raw.translate(None, b"0123456789@/])}>")) != len(raw)  # usually False
        if rare and (len(raw.translate(None, b"0123456789@")) != len(raw) or ":/" in text):
            return False
        low = text.lower()
        if "www." in low or ("dot" in low and _HINT_DOT.search(low) is not None):
            return False
        if may_hold_name(low):
            return False
        if ("=" in text or ":" in text) and _may_hold_credential(low):
            return False
        if " at " in low and _HINT_AT_PROVIDER.search(low) is not None:
            return False
        return not rare or (_HINT_BRACKET_AT.search(low) is None and not _may_share(low))
    stripped = _TRIGGER_CHAR.search(text) is not None
    if stripped:
        text = _CF.sub("", text)
        if _TRIGGER.search(text) is not None:
            return False
    low = (text if stripped else _CF.sub("", text)).lower()  # astral Cf chars too
    if may_hold_name(low):
        return False
    if ("=" in low or ":" in low or "\uff1a" in low) and _may_hold_credential(low):
        return False
    if "t" not in text and "T" not in text and "/" not in text:
        return True  # no "at", "dot", "com/", "ms/" in any case
    return not _may_obfuscate(low) and not _may_share(low)


def _spans(view: str) -> list[tuple[int, int, str]]:
    """Candidate spans ``(start, end, type)`` of every detector over one view, in priority
    order (overlaps are resolved by the caller)."""
    raw = view.encode("utf-8", "surrogatepass")  # lone surrogates may come from JSON
    n_digits = len(raw) - len(raw.translate(None, _ASCII_DIGITS))
    low = view.lower()
    found: list[tuple[int, int, str]] = []
    for kind, pattern, accept, gate in _DETECTORS:
        if not gate(view, low, n_digits):
            continue
        for m in pattern.finditer(view):
            end = accept(m)
            if end is not None:
                found.append((m.start(), end, _KIND_OF.get(m.re, kind)))
    return found


#: A code-prefixed identifier: lower-case ASCII letters, one ``-``, ASCII digits (``e-000123``,
#: ``prod-0001234``), optionally a ``-`` and a lower-case word with up to 3 digits after it (a
#: retry, replica or part: ``e-000123-r0``, ``q-42-dup``): the shape of most event ids
#: (:func:`_plain_identifier`).
_PLAIN_ID = re.compile(r"[a-z]+-[0-9]+(?:-[a-z]+[0-9]{0,3})?")


def _plain_identifier(text: str) -> bool:
    """True if ``text`` surely holds nothing to scrub because of its shape alone: it is
    ``[a-z]+-[0-9]+`` (ASCII), or that and a suffix ``-[a-z]+[0-9]{0,3}`` (see the end), and
    no vendor key prefix starts it. Then ``scrub(text)`` finds
    nothing, so :func:`service.pii.pseudonym.pseudonymise` can skip the detectors (~18 µs an
    id). Why, detector by detector (:data:`_DETECTORS`), for ``L-D`` (letters ``L``, digits
    ``D``; ASCII, so nothing is folded and there is no format character):

    * ``url``, ``ip``, ``email``/``upi``, written-out e-mail: their gates need ``://``,
      ``www.``, ``/``, ``:``, ``.``, ``@``, a space or a bracket; ``L-D`` has none.
    * ``card``, ``aadhaar``, ``ssn``, ``phone`` (every pattern, the cued ones too) start with
      :data:`_NUM_L`: a digit (or ``+``/``(``) not after a word character nor after ``\\w-``.
      ``D``'s first digit follows ``x-`` (a letter, then ``-``), every other one a digit.
    * spaced mobile: ``D``'s first digit may start it, but its pattern needs a separator
      after the first digit (after ``91``, too) and ``D`` is contiguous.
    * ``pan``/``passport``/``voter_id`` (:class:`_DigitAnchored`): tried only at a digit run
      right after a letter, or after a space or ``-`` that follows an UPPER-case letter;
      ``D`` follows ``-`` after a lower-case letter.
      The cued passport (:data:`_CUED_PASSPORT`) starts not after ``\\w``, ``-`` nor ``/``, so
      only at ``L``'s first letter, where the digits do not follow its letters.
    * ``name``: every cue of :mod:`service.pii.names` holds a space or ``--``; ``L-D`` has
      neither. ``address``: each of its patterns needs a space (between the number and the
      street, or the street and the number); ``L-D`` has none.
    * credential (``secret``, :class:`_Credentials`): a ``:``, ``=`` or a space follows its
      cue; ``L-D`` has none. ``iban``: upper-case letters only.
    * ``secret``: its look-behind ``(?<![\\w\\-])`` lets it start only at position 0; the
      prefixes that fit ``L-`` (``sk-``/``pk-``/``rk-`` + 16, ``xoxb-``... + 10, ``glpat-`` +
      20) are excluded by trying :data:`_SECRET` there.

    The suffix ``-S`` (``S``: lower-case letters, then at most 3 digits; ``L-D-S``) brings
    no new character, and nothing that can start or continue a match: its letters follow
    ``-`` after a digit, so every pattern that may start at a letter is excluded there by
    its look-behind (``secret``, IBAN and cued passport: not after ``\\w`` or ``-``) or
    needs what ``L-D-S`` lacks (upper-case letters: IBAN, spaced PAN; a space, ``--``,
    ``:``, ``=``, ``.``, ``@`` or a bracket: names, addresses, credentials, e-mail, URL);
    its digits follow a letter, so no :data:`_NUM_L` or spaced-mobile start (not after a
    word character), and :class:`_DigitAnchored` tries only runs of exactly 4 (PAN) or 7
    (passport, EPIC) digits after a letter, never one of at most 3; ``D`` is followed by
    ``-`` and a letter, never a digit, so no separated group (spaced mobile, SSN, phone
    groups) continues across it. (Trial 12's real log had ``e-000123-r0`` ids: each went
    through every detector, ~10 µs, a tenth of that log's per-event cost outside drift.)

    Hence the spans list of :func:`_spans` is empty on ``text``. ``tests/service/
    test_pii_fuzz.py`` checks ``scrub`` finds nothing in every such text it generates.

    >>> _plain_identifier("prod-0001234"), _plain_identifier("sk-" + "1" * 16)
    (True, False)
    >>> _plain_identifier("E-9876543210"), _plain_identifier("e-98765 43210")
    (False, False)
    """
    return _PLAIN_ID.fullmatch(text) is not None and _SECRET.match(text) is None
