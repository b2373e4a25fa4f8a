// A finished turn as every API family renders it: its text, its tool calls, why it ended and
// whether it was cut. settle_turn decides it once, at the end of the request, from what the
// session gathered; the families only put it in their words (OpenAI's finish_reason "tool_calls",
// Anthropic's stop_reason "tool_use", Responses' status "incomplete").
#pragma once

#include "http/api_structured.hpp"
#include "messages/finish_reason.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::http {

/// What the request asked the turn to write.
enum class turn_mode : std::uint8_t {
    text,        ///< text only
    forced_call, ///< a call (tool_choice required or a named function): the text is its JSON
    auto_calls,  ///< tools with tool_choice auto: the model may open calls after some text
};

/// What the session gathered of a turn while it ran.
struct turn_output {
    turn_mode mode = turn_mode::text;
    std::string text;      ///< the generated text outside any call the model opened itself
    std::string call_text; ///< auto_calls: the text of the calls it opened (the opener included)
    /// forced_call: the one function whose arguments alone were generated; empty when the text
    /// is a {"name","arguments"} object or an array of them.
    std::string tool_name;
};

/// The turn as settled at its end.
struct turn_reply {
    msg::finish_reason finish = msg::finish_reason::stop;
    bool drain_cut = false; ///< the server's drain deadline ended the stream
    /// The reply's text: a text turn's, or the text an auto turn wrote before its calls (or
    /// instead of them, when what it opened was no call). A forced call's text is in call_text.
    std::string text;
    /// The calls' text as generated: a forced call's constrained text (a cut one-function
    /// call's arguments so far are shown as they are), the calls an auto turn opened.
    std::string call_text;
    /// The turn's whole calls. A forced call's whole text is read even when a drain cut the
    /// stream after it; an auto turn's calls only when it was not cut.
    std::vector<forced_call> calls;
    /// The turn's answer is its calls: whole, and the turn not cut.
    bool called = false;
    /// Text a stream has not sent yet: an auto turn's opener that turned out to be no call.
    std::string unsent_text;

    /// The turn ended before the model ended it (max_tokens, the deadline, a drain).
    [[nodiscard]] bool cut() const noexcept { return drain_cut || msg::ran_out(finish); }
    /// Output cut short by max_tokens or the deadline with no whole call to show for it
    /// (Responses' status "incomplete"; a drain cut is a failure instead).
    [[nodiscard]] bool incomplete() const noexcept { return !called && msg::ran_out(finish); }
};

/// The one decision of how a turn ended, for every family.
[[nodiscard]] turn_reply settle_turn(turn_output out, msg::finish_reason finish, bool drain_cut);

} // namespace bitnet::http
