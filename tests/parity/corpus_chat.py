# ruff: noqa: RUF001  (full-width CJK punctuation is the point of the data)
"""Chat scenarios (no tools) and reasoning scenarios, built from :mod:`corpus_text`."""

from __future__ import annotations

from .corpus_base import Message, Scenario, assistant, call, calls, result, scenario, system, user
from .corpus_text import EXCHANGES, MID_SYSTEM_THREAD, SYSTEM_PROMPTS, THREADS
from .corpus_tools import WEATHER_PARIS, WEATHER_TOOLS


def _system_for(i: int) -> list[Message]:
    """Round-robin system prompts on every other index."""
    return [system(SYSTEM_PROMPTS[(i // 2) % len(SYSTEM_PROMPTS)])] if i % 2 == 0 else []


def _thread(turns: tuple[tuple[str, str], ...]) -> list[Message]:
    return [{"role": role, "content": text} for role, text in turns]


def chat_scenarios() -> list[Scenario]:
    """Single-turn prompts, answered exchanges and multi-turn threads.

    Each exchange gives a prompt case (ends with the user, generation prompt) and an answered
    case (ends with the assistant, no generation prompt); the system prompt alternates between
    the two so every exchange is seen with and without one.
    """
    out: list[Scenario] = []
    for i, ex in enumerate(EXCHANGES):
        out.append(scenario(f"chat-{ex.slug}", [*_system_for(i), user(ex.user)], tags=ex.tags))
        out.append(
            scenario(
                f"chat-{ex.slug}-answered",
                [*_system_for(i + 1), user(ex.user), assistant(ex.assistant)],
                tags=ex.tags,
            )
        )
    for i, (slug, turns) in enumerate(THREADS):
        msgs = _thread(turns)
        out.append(scenario(f"thread-{slug}", [*_system_for(i), *msgs]))
        # The same thread cut after its second user message (a generation prompt mid-way).
        users = [k for k, m in enumerate(msgs) if m["role"] == "user"]
        if len(users) >= 2 and users[1] + 1 < len(msgs):
            out.append(scenario(f"thread-{slug}-cut", [*_system_for(i + 1), *msgs[: users[1] + 1]]))
    out.append(scenario("thread-mid-system", _thread(MID_SYSTEM_THREAD)))
    out.append(
        scenario(
            "thread-mid-system-answered",
            [*_thread(MID_SYSTEM_THREAD), assistant("'Silver' casi no tiene rima perfecta en "
                                                    "inglés; 'chilver' es una rima rara.")],
        )
    )
    return out


R_SIMPLE = "The user wants 15% of 80. 10% is 8 and 5% is 4, so 15% is 12."
R_NEWLINES = "\n\nFirst convert hours to minutes: 2.5 h = 150 min.\nThen add 45 min: 195 min.\n\n"
R_CJK = "用户想知道北京和上海的距离。直线距离大约一千零七十公里，高铁大约四个半小时。"
R_CODE = (
    "They want the nth Fibonacci number iteratively:\n\n    a, b = 0, 1\n    for _ in range(n):\n"
    "        a, b = b, a + b\n\nThat is O(n) time and O(1) memory."
)
R_LONG = "\n".join(
    f"Step {k}: compare candidate {k} with the current best; keep the one with the lower "
    f"total cost ({100 + 7 * k} vs {150 - 3 * k})." for k in range(1, 9)
)


def reasoning_scenarios() -> list[Scenario]:
    """Assistant turns with ``reasoning_content``: the final turn, turns before and after the
    last user query, a final turn without reasoning, reasoning with tool calls."""
    q1, a1 = user("What is 15% of 80?"), assistant("15% of 80 is 12.", reasoning=R_SIMPLE)
    q2 = user("And 15% of 120?")
    a2 = assistant("15% of 120 is 18.", reasoning="10% is 12 and 5% is 6, so 18.")
    a2_plain = assistant("15% of 120 is 18.")
    weather_q = user("Should I take an umbrella in Paris today?")
    out = [
        scenario("reasoning-final", [q1, a1]),
        scenario("reasoning-final-sys", [system(SYSTEM_PROMPTS[0]), q1, a1]),
        scenario("reasoning-before-last-query", [q1, a1, q2]),
        scenario("reasoning-history-and-final", [system(SYSTEM_PROMPTS[1]), q1, a1, q2, a2]),
        scenario("reasoning-final-without-reasoning", [q1, a1, q2, a2_plain]),
        scenario("reasoning-only-history", [q1, a1, q2, a2, user("Thanks, that's all.")]),
        scenario("reasoning-newlines", [
            user("How long is 2.5 hours plus 45 minutes, in minutes?"),
            assistant("\n\nThat's 195 minutes.\n", reasoning=R_NEWLINES)]),
        scenario("reasoning-cjk", [
            user("北京到上海有多远？"),
            assistant("直线距离约1070公里，乘坐高铁大约需要4个半小时。", reasoning=R_CJK)]),
        scenario("reasoning-code", [
            system(SYSTEM_PROMPTS[7]),
            user("Write an iterative Fibonacci function in Python."),
            assistant("```python\ndef fib(n: int) -> int:\n    a, b = 0, 1\n    for _ in "
                      "range(n):\n        a, b = b, a + b\n    return a\n```", reasoning=R_CODE)]),
        scenario("reasoning-long", [
            user("Which of the 8 suppliers in my list is cheapest overall?"),
            assistant("Supplier 8 has the lowest total cost (126).", reasoning=R_LONG)],
            tags=("long-text", "numbers")),
        scenario("reasoning-empty", [
            user("Say hi in Italian."), assistant("Ciao! 👋", reasoning="")]),
        scenario("reasoning-emoji-user", [
            user("Rate my plan 🏃‍♀️: run 5 km every day for a month, starting tomorrow."),
            assistant("Ambitious! Alternate running days with rest or easy walks to avoid "
                      "injury. 💪", reasoning="Daily running for a beginner risks overuse "
                      "injuries; suggest rest days.")]),
        scenario("reasoning-tool-call", [
            weather_q,
            calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}),
                  reasoning="I need the current weather in Paris."),
            result("call_wx01", "get_weather", WEATHER_PARIS),
            assistant("No umbrella needed: it's partly cloudy and 18.5 °C.",
                      reasoning="Partly cloudy, no rain mentioned.")],
            tools=WEATHER_TOOLS),
        scenario("reasoning-tool-call-pending", [
            weather_q,
            calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}),
                  reasoning="I need the current weather in Paris."),
            result("call_wx01", "get_weather", WEATHER_PARIS)],
            tools=WEATHER_TOOLS),
        scenario("reasoning-tools-then-new-query", [
            system(SYSTEM_PROMPTS[0]),
            weather_q,
            calls(call("call_wx01", "get_weather", {"location": "Paris, FR"}),
                  reasoning="Check the weather first."),
            result("call_wx01", "get_weather", WEATHER_PARIS),
            assistant("No umbrella needed today.", reasoning="No rain in the result."),
            user("What about 100 EUR in USD?"),
            calls(call("call_cc02", "convert_currency", {"amount": 100, "from_currency": "EUR",
                                                         "to_currency": "USD"}),
                  reasoning="Use the converter."),
            result("call_cc02", "convert_currency", '{"amount": 108.0, "rate": 1.08}')],
            tools=WEATHER_TOOLS),
    ]
    return out
