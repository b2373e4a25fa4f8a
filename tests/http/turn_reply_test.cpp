// settle_turn: the one decision of how a turn ended, which every API family renders.
#include "http/turn_reply.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;
using fr = msg::finish_reason;

TEST_CASE("a text turn is its text, whatever ended it") {
    for (auto f : {fr::stop, fr::eos, fr::length, fr::deadline, fr::cancelled}) {
        const auto r = settle_turn({turn_mode::text, "hello", "", ""}, f, false);
        CHECK(r.text == "hello");
        CHECK(r.calls.empty());
        CHECK_FALSE(r.called);
        CHECK(r.incomplete() == (f == fr::length || f == fr::deadline));
    }
    const auto drained = settle_turn({turn_mode::text, "hel", "", ""}, fr::stop, true);
    CHECK(drained.cut());
    CHECK_FALSE(drained.incomplete()); // a drain is a failure of its own, not an incomplete reply
}

TEST_CASE("a forced call answers with its calls only when whole and not cut") {
    const turn_output among{turn_mode::forced_call, R"({"name":"f","arguments":{"x":1}})", "", ""};
    auto r = settle_turn(among, fr::stop, false);
    CHECK(r.called);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "f");
    CHECK(r.calls[0].arguments == R"({"x":1})");
    CHECK(r.text.empty()); // a forced call's text is no reply text
    CHECK(r.call_text == among.text);

    // The one named function: its arguments alone were generated.
    r = settle_turn({turn_mode::forced_call, R"({"x":2})", "", "g"}, fr::eos, false);
    CHECK(r.called);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "g");

    // max_tokens cut the arguments: no call, and the text so far stays for the families that
    // show it (Responses closes the item with it, status incomplete).
    r = settle_turn({turn_mode::forced_call, R"({"x":)", "", "g"}, fr::length, false);
    CHECK_FALSE(r.called);
    CHECK(r.calls.empty());
    CHECK(r.call_text == R"({"x":)");
    CHECK(r.incomplete());

    // Whole text, but the deadline or a drain ended the turn: the calls are read, not answered.
    r = settle_turn(among, fr::deadline, false);
    CHECK_FALSE(r.called);
    CHECK(r.calls.size() == 1);
    r = settle_turn(among, fr::stop, true);
    CHECK_FALSE(r.called);
    CHECK(r.calls.size() == 1);
    CHECK_FALSE(r.incomplete());
}

TEST_CASE("an auto turn: whole calls follow its text, a cut call is nothing, no call is text") {
    const std::string opened = R"(<tool_call>{"name":"f","arguments":{"q":"x"}}</tool_call>)";
    auto r = settle_turn({turn_mode::auto_calls, "Let me look.", opened, ""}, fr::stop, false);
    CHECK(r.called);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "f");
    CHECK(r.text == "Let me look.");
    CHECK(r.unsent_text.empty());

    // No call opened: a text turn.
    r = settle_turn({turn_mode::auto_calls, "Just text.", "", ""}, fr::eos, false);
    CHECK_FALSE(r.called);
    CHECK(r.text == "Just text.");

    // Cut while writing the call: the text before it, and no call.
    r = settle_turn({turn_mode::auto_calls, "Let me look.", R"(<tool_call>{"name":"f")", ""},
                    fr::length, false);
    CHECK_FALSE(r.called);
    CHECK(r.calls.empty());
    CHECK(r.text == "Let me look.");
    CHECK(r.unsent_text.empty());
    CHECK(r.incomplete());

    // The opener and then no call (a stop string ended it): all of it is the reply's text, and
    // the part a stream has not sent is named.
    r = settle_turn({turn_mode::auto_calls, "A ", "<tool_call>not a call", ""}, fr::stop, false);
    CHECK_FALSE(r.called);
    CHECK(r.text == "A <tool_call>not a call");
    CHECK(r.unsent_text == "<tool_call>not a call");
}
