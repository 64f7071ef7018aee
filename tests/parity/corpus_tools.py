# ruff: noqa: RUF001  (unicode descriptions and arguments are the point of the data)
"""Tool definitions (OpenAI function form, JSON-schema parameters) and tool-use scenarios:
tools without a call, single calls, parallel calls, sequential calls with results, consecutive
results, content together with calls, and a 10+ turn coding-agent loop."""

from __future__ import annotations

import json
from typing import Any

from .corpus_base import (
    Scenario,
    Tool,
    assistant,
    call,
    calls,
    result,
    scenario,
    system,
    user,
)
from .corpus_text import SYSTEM_PROMPTS


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Tool:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


GET_WEATHER = _tool(
    "get_weather",
    "Get the current weather and a short forecast for a city. Météo actuelle — 天气预报.",
    {
        "location": {"type": "string", "description": "City and country, e.g. \"Paris, FR\""},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "days": {"type": "integer", "description": "Forecast length in days (1-7)"},
    },
    ["location"],
)
CONVERT_CURRENCY = _tool(
    "convert_currency",
    "Convert an amount between two ISO 4217 currencies at today's rate.",
    {
        "amount": {"type": "number", "description": "Amount in the source currency"},
        "from_currency": {"type": "string", "description": "Source currency, e.g. EUR"},
        "to_currency": {"type": "string", "description": "Target currency, e.g. JPY"},
    },
    ["amount", "from_currency", "to_currency"],
)
SEARCH_FLIGHTS = _tool(
    "search_flights",
    "Search one-way flights between two airports.",
    {
        "origin": {"type": "string", "description": "IATA code of the departure airport"},
        "destination": {"type": "string", "description": "IATA code of the arrival airport"},
        "date": {"type": "string", "description": "Departure date, YYYY-MM-DD"},
        "passengers": {
            "type": "object",
            "description": "How many travellers of each kind",
            "properties": {
                "adults": {"type": "integer"},
                "children": {"type": "integer"},
            },
            "required": ["adults"],
        },
        "cabin": {"type": "string", "enum": ["economy", "premium_economy", "business"]},
        "flexible_dates": {"type": "boolean", "description": "Also search ±3 days"},
    },
    ["origin", "destination", "date", "passengers"],
)
CREATE_EVENT = _tool(
    "create_calendar_event",
    "Create an event in the user's calendar and invite attendees.",
    {
        "title": {"type": "string"},
        "start": {"type": "string", "description": "ISO 8601 start time with offset"},
        "end": {"type": "string", "description": "ISO 8601 end time with offset"},
        "attendees": {
            "type": "array",
            "description": "People to invite",
            "items": {
                "type": "object",
                "properties": {
                    "email": {"type": "string"},
                    "optional": {"type": "boolean"},
                },
                "required": ["email"],
            },
        },
        "reminders_min": {"type": "array", "items": {"type": "integer"}},
    },
    ["title", "start", "end"],
)
QUERY_DB = _tool(
    "query_database",
    "Run a read-only SQL query against the analytics warehouse.",
    {
        "sql": {"type": "string", "description": "A single SELECT statement"},
        "params": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": "integer", "default": 100},
    },
    ["sql"],
)
TRANSLATE = _tool(
    "translate_text",
    "Translate text. Traduire un texte — 翻译文本 — ترجمة نص.",
    {
        "text": {"type": "string"},
        "target_lang": {"type": "string", "enum": ["en", "fr", "de", "ja", "zh", "ar"]},
        "formality": {"type": "string", "enum": ["formal", "informal"], "default": "formal"},
    },
    ["text", "target_lang"],
)
GET_TIME = _tool(
    "get_current_time",
    "Return the current UTC time.",
    {},
    [],
)
LIST_DIR = _tool(
    "list_directory",
    "List the entries of a directory in the repository.",
    {"path": {"type": "string", "description": "Directory relative to the repository root"}},
    ["path"],
)
READ_FILE = _tool(
    "read_file",
    "Read a UTF-8 text file from the repository.",
    {"path": {"type": "string"}},
    ["path"],
)
WRITE_FILE = _tool(
    "write_file",
    "Replace the whole content of a file in the repository.",
    {"path": {"type": "string"}, "content": {"type": "string"}},
    ["path", "content"],
)
RUN_TESTS = _tool(
    "run_tests",
    "Run pytest on a path and return its output.",
    {
        "path": {"type": "string"},
        "keyword": {"type": "string", "description": "Only tests matching this -k expression"},
    },
    ["path"],
)

WEATHER_TOOLS: list[Tool] = [GET_WEATHER, CONVERT_CURRENCY]
TRAVEL_TOOLS: list[Tool] = [SEARCH_FLIGHTS, GET_WEATHER, CREATE_EVENT]
DATA_TOOLS: list[Tool] = [QUERY_DB, TRANSLATE, GET_TIME]
CODE_TOOLS: list[Tool] = [LIST_DIR, READ_FILE, WRITE_FILE, RUN_TESTS]


def _j(obj: Any) -> str:
    """A tool result as the JSON text a real tool returns (unicode kept)."""
    return json.dumps(obj, ensure_ascii=False)


WEATHER_PARIS = _j({"location": "Paris, FR", "temperature": 18.5, "unit": "celsius",
                    "condition": "partly cloudy", "humidity": 0.62})
WEATHER_TOKYO = _j({"location": "東京, JP", "temperature": 24, "unit": "celsius",
                    "condition": "晴れ", "forecast": [{"day": 1, "high": 26, "low": 19}]})
WEATHER_CAIRO = _j({"location": "القاهرة, EG", "temperature": 31, "unit": "celsius",
                    "condition": "sunny"})

CORE_PY = (
    "import re\nimport unicodedata\n\n\ndef slugify(text: str) -> str:\n"
    "    text = re.sub(r\"[^a-zA-Z0-9\\s-]\", \"\", text)\n"
    "    text = unicodedata.normalize(\"NFKD\", text)\n"
    "    return re.sub(r\"[\\s-]+\", \"-\", text).strip(\"-\").lower()\n"
)
CORE_PY_FIXED = (
    "import re\nimport unicodedata\n\n\ndef slugify(text: str) -> str:\n"
    "    text = unicodedata.normalize(\"NFKD\", text)\n"
    "    text = text.encode(\"ascii\", \"ignore\").decode(\"ascii\")\n"
    "    text = re.sub(r\"[^a-zA-Z0-9\\s-]\", \"\", text)\n"
    "    return re.sub(r\"[\\s-]+\", \"-\", text).strip(\"-\").lower()\n"
)
TEST_PY = (
    "from slugify.core import slugify\n\n\ndef test_slugify_ascii():\n"
    "    assert slugify(\"Hello World\") == \"hello-world\"\n\n\n"
    "def test_slugify_unicode():\n    assert slugify(\"Crème Brûlée\") == \"creme-brulee\"\n"
)
PYTEST_FAIL = (
    "F.                                                                 [100%]\n"
    "=================================== FAILURES ===================================\n"
    "_____________________________ test_slugify_unicode _____________________________\n\n"
    "    def test_slugify_unicode():\n>       assert slugify(\"Crème Brûlée\") == "
    "\"creme-brulee\"\nE       AssertionError: assert 'crme-brle' == 'creme-brulee'\n\n"
    "tests/test_core.py:9: AssertionError\n1 failed, 1 passed in 0.05s\n"
)


DOCSTRING = "\"\"\"Return a lowercase ASCII slug of text.\"\"\"\n"


def _agent_loop(reasoning: bool) -> list[dict[str, Any]]:
    """A coding agent fixing a failing test: 15 messages, 6 tool calls, content with a call."""

    def r(text: str) -> str | None:
        return text if reasoning else None

    return [
        system("You are a coding agent working in a Python repository. Use the tools to "
               "inspect and change files, and run the tests before you answer."),
        user("The test `test_slugify_unicode` fails. Can you fix it?"),
        calls(call("call_ls01", "list_directory", {"path": "."}),
              reasoning=r("Start by looking at the layout of the repository.")),
        result("call_ls01", "list_directory", "README.md\npyproject.toml\nslugify/\ntests/"),
        calls(call("call_rd02", "read_file", {"path": "slugify/core.py"}),
              reasoning=r("The implementation is probably in slugify/core.py.")),
        result("call_rd02", "read_file", CORE_PY),
        calls(call("call_rd03", "read_file", {"path": "tests/test_core.py"})),
        result("call_rd03", "read_file", TEST_PY),
        calls(call("call_rt04", "run_tests", {"path": "tests/test_core.py"})),
        result("call_rt04", "run_tests", PYTEST_FAIL),
        calls(call("call_wr05", "write_file",
                   {"path": "slugify/core.py", "content": CORE_PY_FIXED}),
              content="The regex removes accented letters before normalising, so \"è\" is lost. "
              "I'll normalise to NFKD and drop the combining marks first.",
              reasoning=None),
        result("call_wr05", "write_file", "Wrote 286 bytes to slugify/core.py"),
        calls(call("call_rt06", "run_tests", {"path": "tests/test_core.py"}),
              reasoning=r("Re-run the tests to confirm the fix.")),
        result("call_rt06", "run_tests", "..                                   [100%]\n"
               "2 passed in 0.04s\n"),
        assistant("Fixed. `slugify` now normalises the text to NFKD and strips the combining "
                  "accents before removing other symbols, so \"Crème Brûlée\" becomes "
                  "`creme-brulee`. Both tests pass.",
                  reasoning=r("Both tests pass; summarise the change for the user.")),
    ]


def _sys(i: int) -> list[dict[str, Any]]:
    """A system prompt for even ``i`` (round-robin), none for odd ``i``."""
    return [system(SYSTEM_PROMPTS[(i // 2) % len(SYSTEM_PROMPTS)])] if i % 2 == 0 else []


def tool_scenarios() -> list[Scenario]:
    """All tool-use scenarios (need ``tools``; some need ``parallel`` or ``reasoning``)."""
    weather_q = user("What's the weather like in Paris right now?")
    weather_call = calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}))
    weather_res = result("call_wx01", "get_weather", WEATHER_PARIS)
    weather_ans = assistant("It's 18.5 °C and partly cloudy in Paris, with 62% humidity.")
    two_cities = user("Compare the weather in Tokyo and Cairo, in celsius.")
    par2 = calls(
        call("call_wx11", "get_weather", {"location": "Tokyo, JP", "unit": "celsius"}),
        call("call_wx12", "get_weather", {"location": "Cairo, EG", "unit": "celsius"}),
    )
    par2_res = [result("call_wx11", "get_weather", WEATHER_TOKYO),
                result("call_wx12", "get_weather", WEATHER_CAIRO)]
    par2_ans = assistant("Tokyo: 24 °C and sunny (晴れ). Cairo: 31 °C and sunny. Cairo is 7 °C "
                         "warmer.")
    flight_q = user("Find me a business flight from Lisbon to Osaka on 2026-03-14 for two "
                    "adults and one child, flexible dates are fine.")
    flight_call = calls(call("call_fl21", "search_flights", {
        "origin": "LIS", "destination": "KIX", "date": "2026-03-14",
        "passengers": {"adults": 2, "children": 1}, "cabin": "business",
        "flexible_dates": True}))
    flight_res = result("call_fl21", "search_flights", _j({"results": [
        {"flight": "TP1350/JL5312", "depart": "2026-03-14T06:40+00:00", "stops": 1,
         "price": {"amount": 8412.5, "currency": "EUR"}},
        {"flight": "LH1167/LH740", "depart": "2026-03-15T11:05+00:00", "stops": 1,
         "price": {"amount": 7980.0, "currency": "EUR"}}]}))
    flight_ans = assistant("The cheapest option is Lufthansa via Frankfurt on 15 March "
                           "(7,980.00 € for all three). On the 14th, TAP + JAL costs 8,412.50 €.")
    sc: list[Scenario] = []
    add = sc.append

    # Tool definitions only: the model has not called anything yet.
    for i, (slug, tools, q) in enumerate([
        ("weather", WEATHER_TOOLS, "How much is 250 euros in yen today?"),
        ("travel", TRAVEL_TOOLS, "Hi! Can you help me plan a trip to Osaka?"),
        ("data", DATA_TOOLS, "Traduis « bonjour tout le monde » en japonais, s'il te plaît."),
        ("code", CODE_TOOLS, "Which files are in the tests directory?"),
    ]):
        add(scenario(f"tools-defined-{slug}", [*_sys(i), user(q)], tools=tools))
    add(scenario("tools-defined-answer-without-call",
                 [user("Tell me a fun fact about octopuses."),
                  assistant("An octopus has three hearts and blue blood.")],
                 tools=WEATHER_TOOLS))

    # A single call, ending at different points of the exchange.
    for i, sys_msgs in enumerate((_sys(0), _sys(1))):
        s = "sys" if sys_msgs else "nosys"
        add(scenario(f"single-call-emitted-{s}", [*sys_msgs, weather_q, weather_call],
                     tools=WEATHER_TOOLS))
        add(scenario(f"single-call-result-{s}", [*sys_msgs, weather_q, weather_call,
                                                 weather_res], tools=WEATHER_TOOLS))
        add(scenario(f"single-call-answered-{s}", [*sys_msgs, weather_q, weather_call,
                                                   weather_res, weather_ans],
                     tools=WEATHER_TOOLS))
        if i == 0:
            add(scenario("single-call-follow-up", [*sys_msgs, weather_q, weather_call,
                                                   weather_res, weather_ans,
                                                   user("And in Fahrenheit?")],
                         tools=WEATHER_TOOLS))
    add(scenario("single-call-content-none",
                 [weather_q, calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}),
                                   content=None), weather_res, weather_ans],
                 tools=WEATHER_TOOLS))
    add(scenario("single-call-with-content",
                 [weather_q, calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}),
                                   content="Let me check the current conditions in Paris."),
                  weather_res, weather_ans], tools=WEATHER_TOOLS))
    add(scenario("single-call-nested-args", [*_sys(2), flight_q, flight_call, flight_res,
                                             flight_ans], tools=TRAVEL_TOOLS,
                 tags=("nested-args", "enum", "numbers")))
    add(scenario("single-call-nested-args-result", [flight_q, flight_call, flight_res],
                 tools=TRAVEL_TOOLS, tags=("nested-args",)))
    add(scenario("single-call-array-of-objects", [
        user("Book a 30-minute sync with ana@example.com and (optionally) li.wei@example.cn "
             "tomorrow at 09:00 Berlin time, remind me 10 and 60 minutes before."),
        calls(call("call_ev31", "create_calendar_event", {
            "title": "Sync", "start": "2026-12-02T09:00:00+01:00",
            "end": "2026-12-02T09:30:00+01:00",
            "attendees": [{"email": "ana@example.com"},
                          {"email": "li.wei@example.cn", "optional": True}],
            "reminders_min": [10, 60]})),
        result("call_ev31", "create_calendar_event", _j({"id": "evt_5521", "status": "created"})),
        assistant("Done — \"Sync\" is on your calendar for 09:00–09:30, with reminders 10 and "
                  "60 minutes before."),
    ], tools=TRAVEL_TOOLS, tags=("nested-args", "numbers")))
    add(scenario("single-call-unicode-args", [
        user("Traduza para árabe: «Bom dia, como vai?»"),
        calls(call("call_tr41", "translate_text", {"text": "Bom dia, como vai?",
                                                   "target_lang": "ar",
                                                   "formality": "informal"})),
        result("call_tr41", "translate_text", _j({"translation": "صباح الخير، كيف حالك؟"})),
        assistant("Em árabe: «صباح الخير، كيف حالك؟»"),
    ], tools=DATA_TOOLS, tags=("enum",)))
    add(scenario("single-call-no-arguments", [
        user("What time is it in UTC?"),
        calls(call("call_tm51", "get_current_time", {})),
        result("call_tm51", "get_current_time", "2026-12-01T09:41:07Z"),
        assistant("It is 09:41 UTC."),
    ], tools=DATA_TOOLS))
    add(scenario("single-call-sql-multiline", [
        *_sys(4),
        user("How many orders did we ship per country last month? Top 3 only."),
        calls(call("call_db61", "query_database", {
            "sql": "SELECT country, COUNT(*) AS n\nFROM orders\n"
                   "WHERE shipped_at >= date_trunc('month', now()) - interval '1 month'\n"
                   "  AND shipped_at < date_trunc('month', now())\n"
                   "GROUP BY country\nORDER BY n DESC",
            "params": [], "limit": 3})),
        result("call_db61", "query_database",
               "country | n\n--------+------\nDE      | 1842\nFR      | 1310\nES      |  977\n"
               "(3 rows)"),
        assistant("Last month: Germany 1,842 orders, France 1,310 and Spain 977."),
    ], tools=DATA_TOOLS, tags=("numbers",)))
    add(scenario("single-call-error-result", [
        user("Convert 100 USD to XYZ."),
        calls(call("call_cc71", "convert_currency", {"amount": 100, "from_currency": "USD",
                                                     "to_currency": "XYZ"})),
        result("call_cc71", "convert_currency",
               _j({"error": "unknown currency code 'XYZ'", "code": 400})),
        assistant("\"XYZ\" isn't a valid currency code. Did you mean another currency, e.g. "
                  "CZK or MXN?"),
    ], tools=WEATHER_TOOLS))
    add(scenario("single-call-empty-result", [
        user("Are there any files in the build directory?"),
        calls(call("call_ls81", "list_directory", {"path": "build"})),
        result("call_ls81", "list_directory", ""),
        assistant("The build directory is empty."),
    ], tools=CODE_TOOLS))
    add(scenario("single-call-padded-result", [
        user("  Read the README please.  "),
        calls(call("call_rd91", "read_file", {"path": "README.md"})),
        result("call_rd91", "read_file", "\n# slugify\n\nTurn titles into URL slugs.\n\n"),
        assistant("\nThe README says the project turns titles into URL slugs.\n"),
    ], tools=CODE_TOOLS))
    add(scenario("single-call-float-args", [
        user("How much is 1234.56 EUR in JPY?"),
        calls(call("call_cc72", "convert_currency", {"amount": 1234.56, "from_currency": "EUR",
                                                     "to_currency": "JPY"})),
        result("call_cc72", "convert_currency",
               _j({"amount": 200411.13, "rate": 162.33, "as_of": "2026-12-01"})),
        assistant("1,234.56 € is about ¥200,411 at today's rate of 162.33."),
    ], tools=WEATHER_TOOLS, tags=("numbers",)))

    # Parallel calls (several calls in one message) and consecutive results.
    add(scenario("parallel-calls-emitted", [two_cities, par2], tools=WEATHER_TOOLS))
    add(scenario("parallel-calls-results", [*_sys(0), two_cities, par2, *par2_res],
                 tools=WEATHER_TOOLS))
    add(scenario("parallel-calls-answered", [two_cities, par2, *par2_res, par2_ans],
                 tools=WEATHER_TOOLS))
    add(scenario("parallel-calls-with-content", [
        *_sys(6), two_cities,
        calls(*par2["tool_calls"], content="I'll look up both cities at once."),
        *par2_res, par2_ans], tools=WEATHER_TOOLS))
    add(scenario("parallel-calls-three-tools", [
        user("I fly to Tokyo on Friday: what's the weather there, what time is it now in "
             "UTC, and how much is 500 EUR in JPY?"),
        calls(call("call_p1", "get_weather", {"location": "Tokyo, JP", "days": 3}),
              call("call_p2", "get_current_time", {}),
              call("call_p3", "convert_currency", {"amount": 500, "from_currency": "EUR",
                                                   "to_currency": "JPY"})),
        result("call_p1", "get_weather", WEATHER_TOKYO),
        result("call_p2", "get_current_time", "2026-12-01T09:41:07Z"),
        result("call_p3", "convert_currency", _j({"amount": 81165.0, "rate": 162.33})),
        assistant("Tokyo will be sunny around 24 °C (highs of 26 °C). It's 09:41 UTC now, and "
                  "500 € is about ¥81,165."),
    ], tools=[GET_WEATHER, CONVERT_CURRENCY, GET_TIME], tags=("numbers",)))

    # Sequential calls: the second depends on the first result.
    seq = [
        flight_q, flight_call, flight_res,
        calls(call("call_wx22", "get_weather", {"location": "Osaka, JP", "days": 3})),
        result("call_wx22", "get_weather", _j({"location": "大阪, JP", "temperature": 12,
                                               "condition": "rain", "days": 3})),
    ]
    add(scenario("sequential-calls-result", seq, tools=TRAVEL_TOOLS))
    add(scenario("sequential-calls-answered", [*_sys(2), *seq, assistant(
        "The best fare is 7,980 € (Lufthansa, 15 March). Expect rain and about 12 °C in Osaka, "
        "so pack an umbrella ☔")], tools=TRAVEL_TOOLS))
    add(scenario("sequential-calls-new-question", [
        weather_q, weather_call, weather_res, weather_ans,
        user("Great — and convert 80 EUR to USD for my dinner budget."),
        calls(call("call_cc73", "convert_currency", {"amount": 80, "from_currency": "EUR",
                                                     "to_currency": "USD"})),
        result("call_cc73", "convert_currency", _j({"amount": 86.4, "rate": 1.08})),
        assistant("80 € is about $86.40."),
        user("Thanks!"),
    ], tools=WEATHER_TOOLS))
    add(scenario("sequential-calls-mixed-parallel", [
        *_sys(0), two_cities, par2, *par2_res, par2_ans,
        user("Now Paris too."), weather_call, weather_res,
    ], tools=WEATHER_TOOLS))

    # The coding-agent loop (10+ turns), and variants of where it stops.
    loop = _agent_loop(reasoning=False)
    add(scenario("agent-loop-complete", loop, tools=CODE_TOOLS, tags=("code",)))
    add(scenario("agent-loop-mid-result", loop[:10], tools=CODE_TOOLS, tags=("code",)))
    add(scenario("agent-loop-follow-up", [
        *loop, user("Thanks! Please also add a docstring to slugify."),
        calls(call("call_wr07", "write_file", {
            "path": "slugify/core.py",
            "content": CORE_PY_FIXED.replace("-> str:\n", "-> str:\n    " + DOCSTRING)})),
        result("call_wr07", "write_file", "Wrote 337 bytes to slugify/core.py"),
        assistant("Added a one-line docstring to `slugify`."),
    ], tools=CODE_TOOLS, tags=("code",)))
    add(scenario("agent-loop-reasoning", _agent_loop(reasoning=True), tools=CODE_TOOLS,
                 tags=("code",)))
    add(scenario("agent-loop-reasoning-mid", _agent_loop(reasoning=True)[:9], tools=CODE_TOOLS,
                 tags=("code",)))
    return sc
