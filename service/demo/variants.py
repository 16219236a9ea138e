"""The questions of the demo query log (:mod:`service.demo.querylog`), by topic and intent.

Every question here was written by hand for goldwatch, in the way students, parents and staff
of the invented "Sunrise Institute of Technology, Nagpur" would type them into a help bot:
English, Hinglish (romanised Hindi, ``hi-Latn``) and Hindi in Devanagari (``hi``), often with
English words mixed in. They ask about the same things as the demo gold set
(``gold.jsonl``) but are not copies of it: other wordings, other details, new questions.
Typos, lower case and WhatsApp style are added by the generator, not written here.

An :class:`Intent` is one thing people want to know ("when is the first fee instalment due?").
Its ``scope`` says how a good bot should treat it:

* ``"in"``: answerable from the demo corpus;
* ``"unanswerable"``: on the college's business, but the corpus has no answer (placements,
  the fest, laptops), so the right reply is a refusal;
* ``"out"``: not the college's business at all (weather, cricket, homework): refuse.

``schedule`` marks the exam-schedule intents, whose answers are in the SEE timetable
(``see-timetable-odd-2026.html``), the document that the planted phase-C breakage removes from
the production index.

:data:`PLANTED_PII` holds the few questions with personal data (an e-mail address, an Indian
mobile number, a PAN, an Aadhaar number) that the generator places at fixed points of the log,
for the scrubber to catch. Every e-mail address uses a reserved ``example`` domain, the mobile
number is the customary placeholder ``98765 43210``, and the PAN and Aadhaar numbers are
made up (only their format and check digit are real).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["in", "unanswerable", "out"]

#: Language labels, as in the gold set: English, romanised Hindi / Hinglish, Hindi (Devanagari).
LANGUAGES: tuple[str, ...] = ("en", "hi-Latn", "hi")


def _lines(block: str) -> tuple[str, ...]:
    """Non-blank, stripped lines of a text block."""
    return tuple(line.strip() for line in block.strip().splitlines() if line.strip())


@dataclass(frozen=True)
class Intent:
    """One thing users ask about, with its questions per language.

    Attributes:
        topic: topic label, as in the gold set (``fees``, ``hostel``, ..., ``out-of-scope``).
        name: short intent name, unique within the topic.
        scope: ``"in"``, ``"unanswerable"`` or ``"out"`` (module docstring).
        questions: ``{language: questions}``; a language may be missing.
        schedule: answered from the SEE timetable (the document phase C removes).
    """

    topic: str
    name: str
    scope: Scope
    questions: dict[str, tuple[str, ...]]
    schedule: bool = False


def _intent(
    topic: str,
    name: str,
    en: str = "",
    hinglish: str = "",
    hindi: str = "",
    *,
    scope: Scope = "in",
    schedule: bool = False,
) -> Intent:
    questions = {
        lang: _lines(block)
        for lang, block in (("en", en), ("hi-Latn", hinglish), ("hi", hindi))
        if block.strip()
    }
    return Intent(topic, name, scope, questions, schedule)


INTENTS: tuple[Intent, ...] = (
    # -- fees ----------------------------------------------------------------------------------
    _intent(
        "fees",
        "tuition",
        en="""
        How much is the B.Tech fee for one year?
        what is the total fees for btech mechanical
        fee for CSE AI and ML branch per year?
        How much is the M.Tech tuition fee for 2026-27?
        what are the other fees apart from tuition fee
        is the development fee charged every year or only once?
        how much is the exam fee per year
        total amount to pay for first year btech including all fees
        Is the caution deposit refundable? how much is it
        whats the fees structure for 2026-27
        MCA fees per annum?
        is group insurance compulsory? how much
        """,
        hinglish="""
        btech ka total fees kitna hai saal ka
        CSE AI ML ki fees baaki branch se zyada hai kya?
        MCA ki fees kitni hai ek saal ki
        caution deposit wapas milta hai kya?
        development fee har saal dena padta hai kya
        fees structure bhej do 2026-27 ka
        tuition fee ke alawa aur kya kya fees hai
        mtech ki fees kitni hai bhai
        """,
        hindi="""
        बी.टेक की सालाना फीस कितनी है?
        caution deposit वापस मिलता है क्या?
        B.Tech की fees कितनी है?
        """,
    ),
    _intent(
        "fees",
        "instalments",
        en="""
        When is the second fee instalment due?
        can we pay the fees in two parts
        last date for first installment of fees?
        what percent of the fee is in the first instalment
        My son got admission in the 3rd CAP round in August, by when do we pay the first instalment?
        fee due date december?
        is there an option to pay fees in instalments
        """,
        hinglish="""
        fees installment mein bhar sakte hai kya
        second installment kab tak bharna hai
        pehli kisht ki last date kya hai
        fees ek saath dena hai ya do part mein
        CAP round 3 mein admission hua, fees kab tak bharni hai?
        december wala installment kitna percent hai
        """,
        hindi="""
        fees की दूसरी किस्त कब तक जमा करनी है?
        क्या फीस दो किस्तों में भर सकते हैं?
        """,
    ),
    _intent(
        "fees",
        "late-fee",
        en="""
        What is the penalty for paying fees late?
        how much late fine per day for fees
        is there a maximum late fee?
        I missed the fee deadline by 10 days, how much extra do i pay
        my post matric scholarship is pending, will i be charged late fee
        late fee exemption for scholarship students?
        """,
        hinglish="""
        fees late bhari to kitna fine lagega
        late fee per day kitna hai
        scholarship pending hai to late fee lagega kya?
        fees 2 hafte late ho gayi, penalty kitni
        freeship ka form pending hai, late fee maaf hoga kya
        """,
        hindi="""
        late fee कितनी लगती है? फीस देर से भरी है
        """,
    ),
    _intent(
        "fees",
        "payment-mode",
        en="""
        Can I pay the college fees by UPI?
        how to pay fees online
        can fees be paid by demand draft? in whose name
        Is cash accepted at the accounts section?
        NEFT details for fee payment?
        can i pay fees by cheque
        """,
        hinglish="""
        fees cash mein jama kar sakte hai kya counter pe
        fees online kaise bhare
        DD kiske naam se banana hai fees ke liye
        ERP portal se fees bharna hai kya
        """,
        hindi="""
        क्या फीस नकद जमा कर सकते हैं?
        फीस online कैसे भरें? ERP पर?
        """,
    ),
    _intent(
        "fees",
        "refund",
        en="""
        If I cancel my admission will I get the fees back?
        refund policy if admission cancelled in october
        how much fee is refunded if we cancel before 20 august
        my son got a seat in another college, can we get refund of the fees paid here
        is the caution deposit returned when admission is cancelled
        """,
        hinglish="""
        admission cancel kiya to fees wapas milegi kya
        dusre college mein seat mil gayi, yahan ki fees refund hogi?
        october mein cancel karne pe kitna paisa wapas milega
        """,
        hindi="""
        admission cancel करने पर कितनी fees refund मिलेगी?
        """,
    ),
    _intent(
        "fees",
        "sibling",
        en="""
        Is there a sibling discount on fees?
        both my twins are studying at SIT, any concession
        can sibling concession be combined with merit waiver
        how much concession for the younger brother
        """,
        hinglish="""
        do bachche same college mein hai to fees mein discount milega kya
        chhote bhai ke liye fees concession hai kya
        """,
    ),
    # -- hostel --------------------------------------------------------------------------------
    _intent(
        "hostel",
        "apply",
        en="""
        How do I apply for a hostel room?
        is hostel available for first year girls
        how many hostels are there on campus
        last date to apply for hostel 2026
        hostel allotment is on what basis? merit or first come
        can a student from Nagpur city get hostel
        """,
        hinglish="""
        hostel ke liye apply kaise kare
        ladkiyon ka hostel hai kya campus mein
        hostel milega kya first year mein
        hostel form kab tak bharna hai
        nagpur ke students ko hostel milta hai kya
        """,
        hindi="""
        hostel में room कैसे मिलेगा?
        लड़कियों के लिए हॉस्टल है क्या?
        hostel का form कब भरना है?
        """,
    ),
    _intent(
        "hostel",
        "room-fee",
        en="""
        What is the hostel fee for a triple sharing room?
        how much is the non ac double room in hostel
        hostel fees per year including mess?
        What are the mess charges per month?
        cheapest hostel room price
        is mess compulsory for hostel students
        difference in fees between AC and non AC rooms
        """,
        hinglish="""
        hostel fees kitni hai triple sharing ki
        AC room ka hostel fees kitna hai
        mess ka charge alag se lagta hai kya
        hostel aur mess milake kitna hoga saal ka
        non ac double room kitne ka hai
        """,
        hindi="""
        hostel की fees कितनी है?
        mess का चार्ज कितना है महीने का?
        """,
    ),
    _intent(
        "hostel",
        "payment",
        en="""
        Can the hostel fee be paid semester-wise?
        do we have to pay the full hostel fee at once
        hostel fee instalment option for low income families?
        when is the hostel fee due for first year students
        is mess fee billed monthly or per semester
        """,
        hinglish="""
        hostel fees do installment mein de sakte hai kya
        hostel ka pura paisa ek baar mein dena padega?
        income kam hai, hostel fees semester mein bhar sakte hai?
        hostel fees kab tak jama karni hai first year walo ko
        mess ka bill har mahine aata hai ya semester mein
        """,
        hindi="""
        हॉस्टल फीस किस्तों में भर सकते हैं क्या?
        """,
    ),
    _intent(
        "hostel",
        "timings",
        en="""
        What is the hostel in-time at night?
        hostel gate closing time
        can I come back late to hostel if I have lab work
        what happens if i come after 10 pm to hostel
        is there a late night permission for project students
        hostel curfew on weekends?
        """,
        hinglish="""
        hostel mein raat ko kitne baje tak aana hai
        hostel gate kitne baje band hota hai
        project ka kaam hai lab mein, late aa sakte hai kya hostel
        library mein padhai karke late aaye to chalega kya
        weekend pe bhi 9:30 hi hai kya hostel time
        """,
        hindi="""
        हॉस्टल में रात को कितने बजे तक लौटना है?
        """,
    ),
    _intent(
        "hostel",
        "visitors-rules",
        en="""
        Can parents visit the hostel on weekdays?
        what are the hostel visiting hours
        is an electric kettle allowed in the hostel room
        can I keep an induction plate in hostel
        are pets allowed in hostel lol
        """,
        hinglish="""
        parents hostel mein milne kab aa sakte hai
        hostel mein kettle allowed hai kya
        ghar wale kis time mil sakte hai hostel mein
        """,
        hindi="""
        माता-पिता hostel में कब मिलने आ सकते हैं?
        """,
    ),
    _intent(
        "hostel",
        "vacate-refund",
        en="""
        when do we have to vacate hostel rooms after exams
        if i leave the hostel in the middle of the year do i get money back
        hostel refund rules
        """,
        hinglish="""
        beech mein hostel chhoda to paise wapas milenge kya
        exam ke baad hostel kab khali karna hai
        """,
    ),
    # -- admissions ----------------------------------------------------------------------------
    _intent(
        "admissions",
        "dates",
        en="""
        When does the online application for admission close?
        admission form last date 2026
        when is the provisional merit list coming
        when will institute level seats be filled
        is admission still open for btech
        """,
        hinglish="""
        admission form ki last date kya hai
        merit list kab aayegi
        btech admission abhi bhi chalu hai kya
        institute level seat ke liye form kab tak bhar sakte hai
        """,
        hindi="""
        एडमिशन फॉर्म की आखिरी तारीख क्या है?
        """,
    ),
    _intent(
        "admissions",
        "eligibility",
        en="""
        What is the eligibility for B.Tech first year?
        minimum percentage in 12th for admission
        can I take admission with biology instead of chemistry
        is JEE main score accepted or only MHT CET
        eligibility for lateral entry after diploma
        bsc students can get direct second year?
        """,
        hinglish="""
        btech ke liye 12th mein kitne percent chahiye
        JEE main se admission milega kya ya CET zaroori hai
        diploma ke baad direct second year mein admission hota hai kya
        biology wale bhi engineering le sakte hai kya
        """,
        hindi="""
        बी.टेक में प्रवेश के लिए योग्यता क्या है?
        डिप्लोमा के बाद सीधे दूसरे साल में admission मिलेगा?
        """,
    ),
    _intent(
        "admissions",
        "documents",
        en="""
        which documents to carry for admission verification
        is domicile certificate required for admission
        do I need the original 12th marksheet at reporting
        how many photos are needed for admission
        income certificate of which year is required
        """,
        hinglish="""
        admission ke time kaun kaun se documents lagenge
        domicile certificate zaroori hai kya
        NCL certificate kab tak valid hona chahiye
        photo kitne lagenge admission ke liye
        """,
        hindi="""
        admission के समय कौन से documents चाहिए?
        """,
    ),
    _intent(
        "admissions",
        "provisional",
        en="""
        applied for caste validity but not received it yet, can I still get admission?
        non creamy layer certificate is not ready yet, what to do
        what happens if i dont submit caste validity in time
        can admission be provisional without NCL
        """,
        hinglish="""
        NCL certificate abhi bana nahi, admission ho jayega kya
        caste validity late hua to kya hoga
        validity certificate baad mein de sakte hai kya
        """,
    ),
    _intent(
        "admissions",
        "institute",
        en="""
        Is SIT Nagpur approved by AICTE?
        what is the choice code or institute code of SIT for CAP
        is sunrise institute autonomous
        how many seats in computer engineering
        """,
        hinglish="""
        SIT ka institute code kya hai CAP ke liye
        college autonomous hai kya
        AICTE approved hai na ye college?
        """,
    ),
    # -- scholarships --------------------------------------------------------------------------
    _intent(
        "scholarships",
        "deadlines",
        en="""
        Last date for scholarship renewal?
        when should fresh scholarship applications be submitted
        where do I apply for the government scholarship
        is there an extension for the scholarship deadline
        """,
        hinglish="""
        scholarship renewal ki last date kab hai
        mahadbt pe scholarship form kab tak bharna hai
        scholarship ka form kahan bharna hai
        """,
        hindi="""
        scholarship form की आखिरी तारीख क्या है?
        """,
    ),
    _intent(
        "scholarships",
        "government",
        en="""
        Who is eligible for the EBC freeship?
        income limit for post matric scholarship
        does OBC freeship cover the full tuition fee
        what scholarship is there for SC students
        is freeship available for open category
        """,
        hinglish="""
        EBC freeship ke liye income limit kitni hai
        OBC walo ko kitni fees maaf hoti hai
        open category ko bhi scholarship milti hai kya
        SC students ke liye scholarship hai kya
        """,
        hindi="""
        ईबीसी फ्रीशिप के लिए आय सीमा कितनी है?
        """,
    ),
    _intent(
        "scholarships",
        "institute",
        en="""
        How do I qualify for the merit fee waiver?
        is there any scholarship only for girls
        how many students get the women in engineering scholarship
        when is the institute scholarship amount credited
        do I lose the merit waiver if I have a backlog
        """,
        hinglish="""
        merit waiver ke liye kitna SGPA chahiye
        ladkiyon ke liye koi scholarship hai kya
        institute scholarship ka paisa kab milega
        backlog hai to merit waiver milega kya
        """,
        hindi="""
        लड़कियों के लिए कौन सी छात्रवृत्ति है?
        """,
    ),
    # -- exams: regulations ---------------------------------------------------------------------
    _intent(
        "exams",
        "attendance",
        en="""
        What is the minimum attendance required to sit for the exams?
        my attendance is 68 percent, will i be detained
        how to apply for attendance condonation
        is practical attendance counted separately
        medical certificate for attendance, within how many days to submit
        """,
        hinglish="""
        attendance kam hai 70 percent, exam de sakte hai kya
        kitni attendance chahiye exam ke liye
        condonation ka fees kitna hai
        bimari ki wajah se attendance kam hai kya karu
        """,
        hindi="""
        exam के लिए कितनी attendance जरूरी है?
        """,
    ),
    _intent(
        "exams",
        "marks-grades",
        en="""
        How many marks are needed to pass a subject?
        how is SGPA calculated
        what is the grade for 75 marks
        how many marks is the internal assessment out of
        how to convert CGPA to percentage for job applications
        passing marks in end sem out of 60
        """,
        hinglish="""
        pass hone ke liye kitne marks chahiye
        CGPA ko percentage mein kaise convert kare
        internal marks kitne ke hote hai
        end sem mein kitne marks pe pass hote hai
        """,
        hindi="""
        पास होने के लिए कितने अंक चाहिए?
        """,
    ),
    _intent(
        "exams",
        "revaluation-supplementary",
        en="""
        How do I apply for revaluation?
        what is the fee for photocopy of answer sheet
        when are supplementary exams held for odd semester
        can i get an O grade in the supplementary exam
        what if I was absent for an exam due to illness
        how many backlogs are allowed to go to third year
        is a smartwatch allowed in the exam hall
        """,
        hinglish="""
        revaluation ka form kaise bhare
        supplementary exam kab hota hai
        backlog hai to next year mein ja sakte hai kya
        exam hall mein watch le ja sakte hai kya
        bimar tha exam ke din, ab kya hoga
        photocopy ke liye kitne din mein apply karna hai
        """,
        hindi="""
        revaluation के लिए आवेदन कैसे करें?
        """,
    ),
    # -- exams: schedule (answers in the SEE timetable) -----------------------------------------
    _intent(
        "exams",
        "see-dates",
        en="""
        When do the end semester exams start?
        when will the winter exams end
        exam timetable for odd sem 2026?
        when is the last paper of this semester
        is the end sem starting on 23rd november
        are there exams on sunday
        has the SEE timetable been released
        """,
        hinglish="""
        exam kab se shuru hai
        end sem exam kab se hai
        exam ka time table aa gaya kya
        last paper kab hai is sem ka
        sunday ko bhi paper hai kya
        papers kab khatam honge
        odd sem ke exam kab se start hai
        semester exam kitni tareekh se hai
        """,
        hindi="""
        परीक्षा कब से शुरू है?
        semester exam का time table कब आएगा?
        exam कब खत्म होंगे?
        """,
        schedule=True,
    ),
    _intent(
        "exams",
        "paper-date",
        en="""
        When is the Engineering Mathematics 1 exam?
        date of physics paper first sem
        when is the DBMS exam for 5th sem CSE
        what day is the discrete maths paper
        computer organisation exam date
        is the first year maths paper in the morning or afternoon
        what time does the afternoon session start
        operating systems paper date cse
        """,
        hinglish="""
        maths ka paper kab hai first sem ka
        physics ka exam kis date ko hai
        DBMS ka paper kab hai 5th sem
        afternoon paper kitne baje se hai
        discrete maths ka paper kab hai
        first year ka paper subah hai ya dopahar mein
        BEE ka paper kab hai
        OS ka paper kab hai cse wala
        """,
        hindi="""
        maths का paper कब है?
        दोपहर की पाली का पेपर कितने बजे शुरू होता है?
        """,
        schedule=True,
    ),
    _intent(
        "exams",
        "hall-ticket-forms",
        en="""
        When can we download the hall ticket?
        hall ticket not available, what could be the reason
        last date to fill exam form
        is there a late fee for the exam form
        where do i get my admit card for end sem
        """,
        hinglish="""
        hall ticket kab milega
        exam form ki last date kya hai
        admit card kahan se download kare
        hall ticket nahi aa raha ERP pe
        exam form late bhara to kitna fine
        """,
        hindi="""
        hall ticket कब मिलेगा?
        परीक्षा फॉर्म की आखिरी तारीख क्या है?
        """,
        schedule=True,
    ),
    # -- library -------------------------------------------------------------------------------
    _intent(
        "library",
        "timings",
        en="""
        What are the library timings?
        is the library open on sundays
        library timing during exams
        till what time is the reading hall open
        """,
        hinglish="""
        library kitne baje tak khuli hai
        sunday ko library khulti hai kya
        exam time mein library late tak khuli rehti hai kya
        """,
        hindi="""
        पुस्तकालय कितने बजे तक खुला रहता है?
        """,
    ),
    _intent(
        "library",
        "borrowing",
        en="""
        How many books can I issue at a time?
        for how many days can a PG student keep a book
        how to renew library books online
        what is the fine if I lose a library book
        late return charges for library books
        """,
        hinglish="""
        library se kitni books issue kar sakte hai
        book late lautaye to fine kitna lagega
        book kho gayi library ki, ab kya karu
        book renew kaise kare online
        """,
        hindi="""
        library से कितनी books ले सकते हैं?
        """,
    ),
    _intent(
        "library",
        "book-bank-digital",
        en="""
        Who can use the book bank?
        how do i access IEEE papers from home
        is NPTEL available in the library
        """,
        hinglish="""
        book bank se books kaise milti hai
        IEEE ka access ghar se milega kya
        """,
    ),
    # -- transport -----------------------------------------------------------------------------
    _intent(
        "transport",
        "fee",
        en="""
        How much is the college bus fee per year?
        bus fee for 25 km distance
        bus fee can be paid in installments?
        transport charges from kamptee
        """,
        hinglish="""
        bus ki fees kitni hai saal ki
        college bus ka charge kitna hai
        bus fees installment mein de sakte hai kya
        """,
        hindi="""
        college bus की fees कितनी है?
        """,
    ),
    _intent(
        "transport",
        "pass-routes",
        en="""
        How do I register for the bus pass?
        is there a bus from hingna
        how many bus routes does the college have
        what if I forget my bus pass
        can I change my bus route in the middle of the year
        """,
        hinglish="""
        bus pass kaise banwaye
        hingna se college bus hai kya
        bus pass bhool gaye to kya hoga
        route change kar sakte hai kya bus ka
        """,
        hindi="""
        बस पास कैसे बनेगा?
        """,
    ),
    _intent(
        "transport",
        "timings-refund",
        en="""
        What time does the college bus leave in the evening?
        is there a late bus after 7 pm
        bus timing on saturday
        my daughter moved to the hostel, can we get the bus fee back
        """,
        hinglish="""
        shaam ko bus kitne baje nikalti hai
        late bus hai kya
        saturday ko bus kitne baje jaati hai
        hostel mil gaya to bus fees wapas hogi kya
        """,
        hindi="""
        शाम को बस कितने बजे निकलती है?
        """,
    ),
    # -- salary (staff circular: staff only) -----------------------------------------------------
    _intent(
        "salary",
        "da-hra",
        en="""
        What is the revised DA from July 2026?
        how much HRA do staff get
        is transport allowance given to teaching staff
        DA hike this year for college staff?
        """,
        hinglish="""
        DA kitna badha hai july se
        HRA kitna milta hai staff ko
        is baar DA hike kitna hua
        """,
        hindi="""
        महंगाई भत्ता कितना बढ़ा है?
        """,
    ),
    _intent(
        "salary",
        "pay-arrears",
        en="""
        What is the starting basic pay of an assistant professor?
        when will the pay revision arrears be credited
        salary of associate professor at SIT
        do probation staff get the revised DA
        contract faculty salary per month
        how much does a professor earn here
        """,
        hinglish="""
        arrears kab milenge salary ke
        assistant professor ki basic pay kitni hai
        probation pe DA milega kya
        contract walo ko HRA milta hai kya
        professors ki salary kitni hoti hai yahan
        """,
        hindi="""
        सहायक प्राध्यापक का वेतन कितना है?
        """,
    ),
    # -- exam duty (invigilation note: staff only) ----------------------------------------------
    _intent(
        "exam-duty",
        "invigilation",
        en="""
        How much is paid for a relief duty session?
        when will invigilation remuneration be credited
        evaluation charges per answer book?
        am I exempted from invigilation if I am a paper setter
        how many invigilation duties per faculty this sem
        """,
        hinglish="""
        invigilation ka paisa kab milega
        paper checking ka per copy kitna milta hai
        maternity leave pe duty lagegi kya
        """,
        hindi="""
        invigilation duty का मानदेय कितना है?
        """,
    ),
    # -- unanswerable: college business, no answer in the corpus --------------------------------
    _intent(
        "placements",
        "placements",
        en="""
        Which companies came for campus placement last year?
        average package for CSE at SIT?
        does the college help with internships
        placement percentage of mechanical branch
        is TCS coming for placements this year
        """,
        hinglish="""
        placement kaisa hai college ka
        highest package kitna gaya last year
        internship college dilata hai kya
        """,
        hindi="""
        कॉलेज का प्लेसमेंट कैसा है?
        """,
        scope="unanswerable",
    ),
    _intent(
        "facilities",
        "facilities",
        en="""
        Is there a gym for hostel students?
        does the campus have wifi in the hostel
        is there an ATM inside the campus
        what is the hostel mess menu for this week
        is there a doctor on campus
        """,
        hinglish="""
        campus mein ATM hai kya
        hostel mein wifi milta hai kya
        mess mein aaj kya bana hai
        college mein NCC hai kya
        """,
        hindi="""
        कैंपस में एटीएम है क्या?
        """,
        scope="unanswerable",
    ),
    _intent(
        "events",
        "events",
        en="""
        When is the tech fest this year?
        are there any cultural events in december
        when is the college annual day
        """,
        hinglish="""
        annual function kab hai
        techfest kab hai is saal
        """,
        hindi="""
        वार्षिक उत्सव कब है?
        """,
        scope="unanswerable",
    ),
    _intent(
        "general",
        "general",
        en="""
        What is the NIRF ranking of SIT?
        who is the director of the college
        is SIT better than VNIT
        """,
        hinglish="""
        college ki ranking kya hai
        principal sir ka naam kya hai
        """,
        hindi="""
        कॉलेज की रैंकिंग क्या है?
        """,
        scope="unanswerable",
    ),
    # -- out of scope ---------------------------------------------------------------------------
    _intent(
        "out-of-scope",
        "out-of-scope",
        en="""
        what's the weather in nagpur tomorrow
        india vs australia score
        write my assignment on renewable energy in 500 words
        solve integral of x sin x
        tell me a joke
        best biryani near sitabuldi
        who won the IPL this year
        write a leave application to the class teacher
        which movie is releasing this friday
        how to make money online fast
        translate this paragraph into marathi
        train timings from nagpur to pune
        """,
        hinglish="""
        kal nagpur mein baarish hogi kya
        match ka score kya hai abhi
        mera assignment likh do please
        koi accha gaana batao
        aaj ka rashifal batao
        """,
        hindi="""
        कल मौसम कैसा रहेगा?
        क्रिकेट मैच का स्कोर क्या है?
        मेरा होमवर्क कर दो
        """,
        scope="out",
    ),
)


@dataclass(frozen=True)
class PlantedPii:
    """A question with personal data, placed at a fixed share of the log.

    Attributes:
        at: position as a share of the log (0..1); the generator puts it at ``int(at * n)``.
        question: the question text, with its personal data.
        topic, intent: the intent it belongs to (see :data:`INTENTS`).
        language: its language label.
        role: the asker's role.
        pii: the kinds of personal data in it, as :mod:`service.pii` names them.
    """

    at: float
    question: str
    topic: str
    intent: str
    language: str
    role: str
    pii: tuple[str, ...]


PLANTED_PII: tuple[PlantedPii, ...] = (
    PlantedPii(
        0.04,
        "paid the first instalment by NEFT but no receipt came. pls send it to "
        "priya.deshmukh87@example.com",
        "fees",
        "instalments",
        "en",
        "parent",
        ("email",),
    ),
    PlantedPii(
        0.13,
        "hostel seat confirm hua ya nahi? mera number +91 98765 43210 hai, call kar do",
        "hostel",
        "apply",
        "hi-Latn",
        "parent",
        ("phone",),
    ),
    PlantedPii(
        0.22,
        "scholarship form mein father ka PAN ABCPE1234F daala hai, error aa raha hai. "
        "last date kya hai",
        "scholarships",
        "deadlines",
        "hi-Latn",
        "student",
        ("pan",),
    ),
    PlantedPii(
        0.31,
        "my Aadhaar 2341 2341 2346 is linked but the freeship income limit check failed. "
        "who is eligible for EBC freeship?",
        "scholarships",
        "government",
        "en",
        "student",
        ("aadhaar",),
    ),
    PlantedPii(
        0.52,
        "hall ticket not showing on ERP for my son. contact me on 9876543210 urgently",
        "exams",
        "hall-ticket-forms",
        "en",
        "parent",
        ("phone",),
    ),
    PlantedPii(
        0.63,
        "exam kab se shuru hai? pls reply on whatsapp +91-98765-43210 or rahul.verma@example.in",
        "exams",
        "see-dates",
        "hi-Latn",
        "parent",
        ("email", "phone"),
    ),
    PlantedPii(
        0.81,
        "September salary slip not received, arrears kab milenge? my PAN is AAAPL1234C",
        "salary",
        "pay-arrears",
        "hi-Latn",
        "staff",
        ("pan",),
    ),
    PlantedPii(
        0.93,
        "library fine paid online but shows unpaid. mail receipt to sneha.rao@example.org",
        "library",
        "borrowing",
        "en",
        "student",
        ("email",),
    ),
)
