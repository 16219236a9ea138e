"""Bank account numbers after an account cue (trial 22, a bank's support team: ``My account
number is 40217788123`` and ``acct 5500 1234 5678 9010`` were stored, shown and exported as
written; an 11- and a 14-digit account number were kept, a 12-digit one counted as Aadhaar).

Recall: the trial's six questions (/tmp/t37b/pii.jsonl) and sentences written by hand in the
shapes bank customers write them (English, Hinglish, Hindi; grouped or not; 6-18 digits).
Precision: the 81,507 real texts (CLINC150 all intents, BANKING77 train and test, NQ-open
dev, Hinglish-TOP's three splits, XQuAD's questions and paragraphs, the SQuAD 2.0 and
MultiHop-RAG samples) hold one account span, ``checking account 20905432`` (CLINC150's
``add my wife as an authorized user to checking account 20905432``: an account number; read
by hand), and no other: every text with an account cue and a run of 6+ digits was read (two:
that one, and ``account ending in sequence 939392``, kept: ``sequence`` is no link word)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.pii import scrub
from service.pii.scrub import _find
from tests.service.test_pii_names import _clinc, other_questions, xquad_squad_multihop_texts

SCRUBBED = [
    # the trial's texts (/tmp/t37b/pii.jsonl and its log)
    (
        "My account number is 40217788123 and my card was charged twice",
        "My account number is <ACCOUNT> and my card was charged twice",
    ),
    ("acct no. 123456789012 transfer pending", "acct no. <ACCOUNT> transfer pending"),  # 12
    ("my a/c 5500 1234 5678 9010 is blocked", "my a/c <ACCOUNT> is blocked"),  # Luhn fails
    (
        "IFSC HDFC0001234 account 50100123456789 transfer failed",  # 14 digits, Luhn passes
        "IFSC HDFC0001234 account <ACCOUNT> transfer failed",
    ),
    (
        "mera account number 40217788123 hai, paisa nahi aaya",
        "mera account number <ACCOUNT> hai, paisa nahi aaya",
    ),
    ("acct 5500 1234 5678 9010 declined card payment why",
     "acct <ACCOUNT> declined card payment why"),
    ("why was it rejected? my acct 40217788123", "why was it rejected? my acct <ACCOUNT>"),
    # more shapes: cues, link words, groupings, lengths 6-18
    ("A/C No. 0123-4567-8901 not credited", "A/C No. <ACCOUNT> not credited"),
    ("acc no 12345678 kya hai status", "acc no <ACCOUNT> kya hai status"),
    ("transfer to account #918020034567", "transfer to account #<ACCOUNT>"),
    ("my bank account is 12345678901234 please check", "my bank account is <ACCOUNT> please check"),
    ("savings account number: 002301 567890", "savings account number: <ACCOUNT>"),
    ("account details - 123456", "account details - <ACCOUNT>"),
    ("card linked to account ending in 939392", "card linked to account ending in <ACCOUNT>"),
    ("mera khata number 40217788123 hai", "mera khata number <ACCOUNT> hai"),
    ("khata sankhya 3345 6789 0123 band ho gaya", "khata sankhya <ACCOUNT> band ho gaya"),
    ("मेरा खाता संख्या 123456789012 है", "मेरा खाता संख्या <ACCOUNT> है"),
    ("खाता नंबर 40217788123 में पैसा नहीं आया", "खाता नंबर <ACCOUNT> में पैसा नहीं आया"),
    ("account number 9876543210 blocked", "account number <ACCOUNT> blocked"),  # not a phone
    ("ACCOUNT NO 123456789012345678", "ACCOUNT NO <ACCOUNT>"),  # 18 digits
    ("add my wife as an authorized user to checking account 20905432",
     "add my wife as an authorized user to checking account <ACCOUNT>"),  # CLINC150
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), SCRUBBED)
def test_an_account_number_after_its_cue_is_scrubbed(text: str, expected: str) -> None:
    found = scrub(text)
    assert (found.text, found.counts) == (expected, {"account": 1})
    assert scrub(expected).text == expected  # the placeholder cues nothing further


OTHER_TYPES = [
    # a card number with no account cue stays a card, an Aadhaar with its own cue an Aadhaar,
    # an IBAN an IBAN (checked first, mod 97)
    ("card 4111 1111 1111 1111 was declined", "card <CARD> was declined", "card"),
    ("aadhaar 1234 5678 9012 update", "aadhaar <AADHAAR> update", "aadhaar"),
    ("my account IBAN DE89 3704 0044 0532 0130 00", "my account IBAN <IBAN>", "iban"),
    ("account iban GB82WEST12345698765432", "account iban <IBAN>", "iban"),
]


@pytest.mark.parametrize(("text", "expected", "kind"), OTHER_TYPES)
def test_other_numbers_keep_their_type(text: str, expected: str, kind: str) -> None:
    found = scrub(text)
    assert (found.text, found.counts) == (expected, {kind: 1})


KEPT = [
    "account for 25 percent of 1000000",  # another word between the cue and the number
    "account balance 250000",
    "mere account mein 50000 aaye",
    "accounts 12345678 opened in 2019",  # the plural is no cue
    "account 500000 rs credited",  # an amount: a currency follows
    "account hai 250000 rupees",
    "account 1000000",  # a digit and zeros: a figure
    "account number 12345",  # 5 digits
    "account 1234567890123456789",  # 19 digits
    "account ending 1234",
    "account no. 123.456789",  # a decimal
    "order no. 40217788123",  # no account cue
    "khatam hone ke baad 123456 din",  # "khata" inside a word
    "my account ID-12345678",  # glued to a code
]


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_are_kept(text: str) -> None:
    assert scrub(text).text == text


@pytest.mark.slow
def test_real_texts_hold_one_account_number(shared_data: Path) -> None:
    """Of the 81,507 real texts only CLINC150's ``checking account 20905432`` holds an
    account span (see the module docstring)."""
    texts = other_questions(shared_data) + xquad_squad_multihop_texts(shared_data)
    texts += [text for text, intent in _clinc(shared_data) if intent == "change_user_name"]
    assert len(texts) == 81_507
    found = [(text, text[a:b]) for text in texts for a, b, kind in _find(text) if kind == "account"]
    assert found == [("add my wife as an authorized user to checking account 20905432", "20905432")]
