# ruff: noqa: RUF001  (full-width punctuation, dashes, math letters: the point of the data)
"""Texts of the parity corpus: system prompts and question/answer exchanges.

Everything here is what real users send and real assistants answer: plain questions, code
with indentation (spaces and tabs), numbers, CJK, emoji, accents, right-to-left scripts,
Markdown, long multi-line texts, and text with leading/trailing spaces and newlines (the
templates trim some of them). Nothing here spells a control token of any family.
"""

from __future__ import annotations

from dataclasses import dataclass

#: System prompts, reused round-robin by the chat and tool scenarios.
SYSTEM_PROMPTS: tuple[str, ...] = (
    "You are a helpful assistant.",
    "You are a concise assistant. Answer in at most two sentences.",
    "Tu es un assistant francophone. Réponds toujours en français, avec des phrases courtes.",
    "你是一个乐于助人的助手。请用简体中文回答用户的问题。",
    "You are a senior Python reviewer.\n\nRules:\n1. Point out bugs first.\n"
    "2. Suggest idiomatic fixes.\n3. Keep answers under 200 words.",
    "  You are a friendly tutor for high-school maths. Explain every step.  \n",
    "You are the support assistant of Nordlicht Bikes GmbH (Berlin). Be polite, use the "
    "customer's language, and never promise refunds without an order number.",
    "\nYou are a coding assistant. Always put code in fenced blocks with a language tag.\n",
)


@dataclass(frozen=True)
class Exchange:
    """One user question and the assistant's answer; ``tags`` name what the text exercises."""

    slug: str
    user: str
    assistant: str
    tags: frozenset[str] = frozenset()


def _ex(slug: str, user: str, assistant: str, *tags: str) -> Exchange:
    return Exchange(slug, user, assistant, frozenset(tags))


EXCHANGES: tuple[Exchange, ...] = (
    _ex("capital", "What is the capital of Australia?",
        "The capital of Australia is Canberra, not Sydney as many people assume."),
    _ex("percent", "What's 17% of 2,480? Also convert 3.75 km to miles.",
        "17% of 2,480 is 421.6.\n\n3.75 km is about 2.33 miles (1 km = 0.621371 mi).",
        "numbers"),
    _ex("python-bug",
        "Why does this crash?\n\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n"
        "print(mean([]))\n```",
        "An empty list has length 0, so `sum(xs) / len(xs)` divides by zero and raises "
        "`ZeroDivisionError`. Guard against it:\n\n```python\ndef mean(xs):\n    if not xs:\n"
        "        raise ValueError(\"mean() of an empty sequence\")\n    return sum(xs) / len(xs)\n"
        "```"),
    _ex("great-wall", "请用三句话介绍一下长城。",
        "长城是中国古代修建的军事防御工程，总长度超过两万公里。它始建于春秋战国时期，"
        "明朝时进行了大规模的重修。如今它是世界文化遗产，也是中国最著名的旅游景点之一。"),
    _ex("ramen", "東京でおすすめのラーメン屋さんを三つ教えてください。",
        "いくつかご紹介します。\n\n1. 一蘭（渋谷）— とんこつラーメンの定番です。\n"
        "2. 中華そば 青葉（中野）— 魚介と動物系のダブルスープ。\n"
        "3. 蔦（代々木上原）— 醤油ラーメンで有名なお店です。"),
    _ex("korean-weather", "안녕하세요! 서울은 10월에 날씨가 어때요?",
        "10월의 서울은 선선하고 맑은 날이 많아요. 낮 기온은 보통 15~22°C 정도이고, "
        "아침저녁으로는 쌀쌀하니 얇은 겉옷을 챙기세요."),
    _ex("birthday", "Write a short birthday message for my sister 🎂🎉 She loves cats 🐈",
        "Happy birthday, sis! 🥳 May your year be full of naps in the sun, warm tea and "
        "as many cat cuddles as you can handle 🐾❤️"),
    _ex("french-fix",
        "Peux-tu corriger cette phrase : « Je suis allé a la plage hier, il faisait tres "
        "beau. »",
        "Voici la phrase corrigée : « Je suis allé à la plage hier, il faisait très beau. »\n"
        "Il manquait l'accent grave sur « à » et l'accent grave sur « très »."),
    _ex("german-seit", "Was ist der Unterschied zwischen „seit“ und „seid“?",
        "„Seit“ ist eine Präposition der Zeit (seit gestern), „seid“ ist eine Form des "
        "Verbs „sein“ (ihr seid müde). Merkhilfe: Zeit hat ein t, wie seit."),
    _ex("arabic-capital", "ما هي عاصمة المغرب؟ وما هي أكبر مدينة فيها؟",
        "عاصمة المغرب هي الرباط، أما أكبر مدينة فهي الدار البيضاء."),
    _ex("hebrew-thanks", "איך אומרים 'תודה רבה' באנגלית?",
        "באנגלית אומרים \"Thank you very much\". אפשר גם לומר \"Thanks a lot\"."),
    _ex("padded-hello", "   hello there   ", "  Hi! How can I help you today?  \n",
        "whitespace"),
    _ex("newline-colors", "\n\nCan you list the three primary colours of paint?\n",
        "\nRed, yellow and blue.\n\n", "whitespace"),
    _ex("cover-letter",
        "Please shorten this cover letter to about half its length, keeping the tone:\n\n"
        "Dear Ms. Okafor,\n\nI am writing to apply for the position of Data Analyst at Greenfield "
        "Logistics, which I saw advertised on your website last week. I have four years of "
        "experience analysing supply-chain data, most recently at Harbor & Co., where I built "
        "dashboards that reduced late deliveries by 12%.\n\nIn my current role I work daily with "
        "SQL, Python and Tableau. I enjoy turning messy spreadsheets into clear stories that "
        "operations teams can act on, and I have trained six colleagues in basic data "
        "literacy.\n\nI would welcome the chance to discuss how I could contribute to your "
        "team. Thank you for your time and consideration.\n\nKind regards,\nDaniel Mwangi",
        "Dear Ms. Okafor,\n\nI am applying for the Data Analyst position at Greenfield "
        "Logistics. Over four years of supply-chain analytics, most recently at Harbor & Co., "
        "I built dashboards that cut late deliveries by 12%, using SQL, Python and Tableau "
        "every day.\n\nI would welcome the chance to discuss how I can help your team.\n\n"
        "Kind regards,\nDaniel Mwangi", "long-text"),
    _ex("list-vs-tuple", "Compare Python lists and tuples in a small table.",
        "| Feature | list | tuple |\n|---|---|---|\n| Mutable | yes | no |\n"
        "| Hashable | no | yes (if items are) |\n| Literal | `[1, 2]` | `(1, 2)` |\n"
        "| Typical use | growing collections | fixed records |"),
    _ex("to-json", "Turn this into JSON: name Alice, age 30, speaks English and Spanish.",
        "```json\n{\n  \"name\": \"Alice\",\n  \"age\": 30,\n  \"languages\": [\"English\", "
        "\"Spanish\"]\n}\n```"),
    _ex("rust-borrow",
        "What's wrong here?\n\n```rust\nfn main() {\n    let s = String::from(\"hi\");\n"
        "    let t = s;\n    println!(\"{}\", s);\n}\n```",
        "`let t = s;` moves the `String` into `t`, so `s` can no longer be used. Borrow or clone "
        "it instead:\n\n```rust\nfn main() {\n    let s = String::from(\"hi\");\n"
        "    let t = &s;\n    println!(\"{} {}\", s, t);\n}\n```"),
    _ex("sql-top", "Write a SQL query for the 5 customers with the highest total order value.",
        "```sql\nSELECT c.id, c.name, SUM(o.amount) AS total\nFROM customers AS c\n"
        "JOIN orders AS o ON o.customer_id = c.id\nGROUP BY c.id, c.name\n"
        "ORDER BY total DESC\nLIMIT 5;\n```"),
    _ex("find-big", "How do I find files larger than 100 MB under my home directory?",
        "Use `find`:\n\n```bash\nfind ~ -type f -size +100M -exec ls -lh {} \\; 2>/dev/null\n"
        "```\n\nAdd `| sort -k5 -h` to sort them by size."),
    _ex("quadratic", "Solve x^2 - 5x + 6 = 0 and show the steps.",
        "Use the quadratic formula with a = 1, b = -5, c = 6:\n\n"
        "$$x = \\frac{5 \\pm \\sqrt{25 - 24}}{2} = \\frac{5 \\pm 1}{2}$$\n\n"
        "So x = 3 or x = 2. Check: 3² − 5·3 + 6 = 0 ✓", "numbers"),
    _ex("makefile-tabs",
        "My Makefile says 'missing separator'. Here it is:\n\nbuild:\n    go build ./...",
        "Make requires recipe lines to start with a tab, not spaces:\n\n```makefile\nbuild:\n"
        "\tgo build ./...\n```", "whitespace"),
    _ex("good-morning", "Translate 'good morning' into Russian, Greek and Hindi.",
        "Russian: Доброе утро\nGreek: Καλημέρα\nHindi: सुप्रभात"),
    _ex("pancakes", "Scale this recipe to 6 people: 2 eggs, ½ cup milk, 120 g flour (serves 4).",
        "For 6 people multiply everything by 1.5:\n\n- 3 eggs\n- ¾ cup milk\n- 180 g flour\n\n"
        "Cook at medium heat (about 180 °C) for 2–3 minutes per side.", "numbers"),
    _ex("haiku", "Write a haiku about autumn rain.",
        "Cold rain on the roof —\nthe maple lets go its last\nred leaf to the wind."),
    _ex("html-table",
        "Why doesn't this table render right?\n\n<table>\n  <tr><td>Name</td><td>Age</tr>\n"
        "</table>",
        "The first row is missing a closing `</td>` after `Age`:\n\n```html\n<table>\n"
        "  <tr><td>Name</td><td>Age</td></tr>\n</table>\n```", "html"),
    _ex("timezones", "If it's 14:30 in Paris, what time is it in Tokyo and New York?",
        "In winter Tokyo is 8 hours ahead and New York 6 hours behind Paris: 22:30 in Tokyo "
        "and 08:30 in New York.", "numbers"),
    _ex("question-mark", "?", "It looks like your message was cut off. What would you like to "
        "know?"),
    _ex("hi", "hi", "Hello! 👋 What can I do for you?"),
    _ex("zwj-emoji", "What does the emoji 👨‍👩‍👧‍👦 mean, and how many code points is it?",
        "It is the \"family: man, woman, girl, boy\" emoji. It is made of 7 code points: four "
        "person emoji joined by three zero-width joiners (U+200D)."),
    _ex("decomposed", "Is “café” spelled with a combining accent the same as “café”?",
        "They look identical, but the first uses e + U+0301 (combining acute) and the second "
        "the single code point U+00E9. Unicode normalisation (NFC) makes them equal.", "nfc"),
    _ex("math-bold", "Convert ABC to mathematical bold letters.",
        "Here you go: 𝐀𝐁𝐂 (U+1D400, U+1D401, U+1D402). Rare CJK such as 𠀋 is outside the "
        "BMP too."),
    _ex("windows-path", "Why does Python complain about \"C:\\Users\\ana\\new_folder\"?",
        "In a normal string `\\n` is a newline and `\\U` starts a Unicode escape. Use a raw "
        "string: `r\"C:\\Users\\ana\\new_folder\"`, or forward slashes."),
    _ex("yaml-indent",
        "Is this valid YAML?\n\nservices:\n  web:\n    image: nginx:1.27\n    ports:\n"
        "      - \"8080:80\"\n   environment:\n      - DEBUG=1",
        "Not quite: `environment` is indented with 3 spaces instead of 4, so it is not a key of "
        "`web`. Fixed:\n\n```yaml\nservices:\n  web:\n    image: nginx:1.27\n    ports:\n"
        "      - \"8080:80\"\n    environment:\n      - DEBUG=1\n```", "whitespace"),
    _ex("crlf", "I pasted this from Windows:\r\nline one\r\nline two\r\nWhy do I see ^M in vim?",
        "Those are carriage returns (\\r) from Windows line endings. In vim run `:set ff=unix` "
        "and save, or use `dos2unix file.txt`.", "whitespace"),
    _ex("trailing-spaces", "Summarise the plot of Hamlet in one paragraph.   \n\n",
        "Prince Hamlet learns from his father's ghost that his uncle Claudius murdered the king "
        "and married his mother. Feigning madness, Hamlet hesitates, stages a play to test "
        "Claudius, and accidentally kills Polonius. The tragedy ends in a duel in which Hamlet, "
        "Laertes, Gertrude and Claudius all die.   ", "whitespace"),
    _ex("big-numbers", "What is 2^64, and how many seconds are in a leap year?",
        "2^64 = 18,446,744,073,709,551,616.\n\nA leap year has 366 × 24 × 3600 = 31,622,400 "
        "seconds.", "numbers"),
    _ex("packing-list",
        "I'm hiking for 3 days in the Alps in September. What should I pack?",
        "A compact list:\n\n- **Clothing**: base layers, fleece, waterproof shell, hat and "
        "gloves (it can snow above 2,500 m)\n- **Gear**: 30–40 L pack, headlamp, trekking poles\n"
        "  - map and compass, even with a GPS\n  - first-aid kit\n- **Food & water**: 2 L "
        "capacity, snacks, hut reservations for dinner\n- **Documents**: ID, Alpine Club card, "
        "cash for the huts (CHF/EUR)", "long-text"),
)


#: Multi-turn threads: (slug, [(role, text), ...]); the role order is part of the thread.
THREADS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("trip-lisbon", (
        ("user", "I'm visiting Lisbon for a long weekend in May. Where should I stay?"),
        ("assistant", "Alfama is charming and central; Príncipe Real is quieter and trendy; "
         "Baixa is convenient for first-timers."),
        ("user", "Which one is best for someone who hates hills?"),
        ("assistant", "Baixa — it is flat, with easy metro access. Alfama and Bairro Alto are "
         "steep."),
        ("user", "Great. Any day trip you'd recommend?"),
    )),
    ("refactor-loop", (
        ("user", "Can you make this more Pythonic?\n\n```python\nresult = []\nfor i in "
         "range(len(names)):\n    if names[i] != '':\n        result.append(names[i].upper())\n"
         "```"),
        ("assistant", "Use a comprehension and iterate directly:\n\n```python\nresult = "
         "[name.upper() for name in names if name]\n```"),
        ("user", "And if names can contain None?"),
        ("assistant", "`if name` already skips both `None` and `''`, so the same line works."),
        ("user", "Nice. What about keeping the index?"),
        ("assistant", "Use `enumerate`:\n\n```python\nresult = [(i, name.upper()) for i, name in "
         "enumerate(names) if name]\n```"),
    )),
    ("japanese-lesson", (
        ("user", "How do I say 'I would like a coffee' in Japanese?"),
        ("assistant", "コーヒーをお願いします (kōhī o onegai shimasu)."),
        ("user", "And politely asking for the bill?"),
        ("assistant", "お会計をお願いします (okaikei o onegai shimasu)."),
        ("user", "ありがとう！ How do I say 'it was delicious'?"),
    )),
    ("fractions", (
        ("user", "What is 3/4 + 5/6?"),
        ("assistant", "The common denominator is 12: 9/12 + 10/12 = 19/12 = 1 7/12."),
        ("user", "And 3/4 × 5/6?"),
        ("assistant", "Multiply across: 15/24, which simplifies to 5/8."),
        ("user", "Divide them instead?"),
        ("assistant", "3/4 ÷ 5/6 = 3/4 × 6/5 = 18/20 = 9/10."),
        ("user", "Thanks!"),
        ("assistant", "You're welcome — fractions get easier with practice. 🙂"),
    )),
    ("bike-support", (
        ("user", "Hallo, meine Gangschaltung springt ständig. Was kann ich tun?"),
        ("assistant", "Das liegt oft an einem gedehnten Schaltzug. Drehen Sie die "
         "Einstellschraube am Schaltwerk eine halbe Umdrehung gegen den Uhrzeigersinn."),
        ("user", "Hat leider nichts gebracht."),
        ("assistant", "Dann ist eventuell das Schaltauge verbogen. Bringen Sie das Rad bitte zu "
         "einer unserer Werkstätten; mit Ihrer Bestellnummer ist die Prüfung kostenlos."),
    )),
    ("two-user-messages", (
        ("user", "Quick question about CSS."),
        ("user", "How do I center a div horizontally and vertically?"),
        ("assistant", "With flexbox on the parent:\n\n```css\n.parent {\n  display: flex;\n"
         "  justify-content: center;\n  align-items: center;\n}\n```"),
        ("user", "And with grid?"),
    )),
    ("assistant-opens", (
        ("assistant", "Hi! I'm your onboarding assistant. What would you like to set up first: "
         "email, calendar or VPN?"),
        ("user", "VPN please."),
        ("assistant", "Sure. Open Settings → Network → VPN, then choose \"Add configuration\" "
         "and import the file you received by email."),
        ("user", "Done, it says connected ✅"),
    )),
    ("long-chat-arabic", (
        ("user", "مرحبا، أريد أن أتعلم البرمجة. من أين أبدأ؟"),
        ("assistant", "ابدأ بلغة Python لأنها سهلة القراءة. جرّب موقعاً تفاعلياً للتمارين."),
        ("user", "كم ساعة في الأسبوع أحتاج؟"),
        ("assistant", "خمس ساعات أسبوعياً بانتظام أفضل من عشرين ساعة مرة واحدة."),
        ("user", "Can we continue in English?"),
        ("assistant", "Of course! Start with variables, loops and functions, then build a small "
         "project such as a to-do list."),
        ("user", "What project after that?"),
        ("assistant", "A weather app that calls a public API teaches you HTTP, JSON and error "
         "handling."),
        ("user", "Perfect, thank you."),
    )),
)

#: A mid-conversation system message (some templates render it as a system turn).
MID_SYSTEM_THREAD: tuple[tuple[str, str], ...] = (
    ("system", "You are a helpful assistant."),
    ("user", "Give me a word that rhymes with 'orange'."),
    ("assistant", "Nothing rhymes perfectly with 'orange'; 'door hinge' is a popular near "
     "rhyme."),
    ("system", "The user prefers answers in Spanish from now on."),
    ("user", "And one that rhymes with 'silver'?"),
)
