// Tool calls a model chooses itself (tool_choice "auto"): generation is free text until the model
// writes its template's call opener, and only from there does the call grammar constrain it (a
// lazy grammar, as llama.cpp's). Two halves see the output, and must agree on where the call
// opens: the executor (over each token's piece, to start masking) and the batcher (over the
// detokenized text, to send the call's text apart from the reply's). Both run one call_splitter,
// whose answer depends only on the bytes it is fed, however they are cut into tokens.
#pragma once

#include "model/tokenizer/chat_formatter.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace bitnet::model::constrain {

/// Where a call opens. `at_start`: only at the start of the output (after whitespace), and the
/// opener's bytes are the call value's first bytes (Llama 3.1 writes the call's JSON object
/// alone, so its opener is that object's `{`). Otherwise anywhere, and the value follows the
/// opener (Hermes' `<tool_call>`).
struct call_opener {
    std::string text;
    bool at_start = false;
};

/// The call grammar of one auto turn: the JSON Schema the call is decoded under once opened, and
/// its opener.
struct auto_call_grammar {
    std::string schema;
    call_opener opener;
};

/// The grammar for a template's call syntax, from the request's functions as http/ sends them
/// (generate_request::tool_union): {"calls": [{"name": N, "arguments": S}, ...], "$defs": {...},
/// "parallel": bool}, each S the function's parameters (a $ref into $defs) or an object schema.
/// Hermes writes one {"name","arguments"} object; Falcon3's list form an array of them (at most
/// `max_calls`, one unless parallel); Llama 3.1 {"name","parameters"}. Nothing for
/// tool_call_syntax::none or a malformed union.
[[nodiscard]] std::optional<auto_call_grammar>
auto_call_grammar_for(tool_call_syntax syntax, std::string_view tool_union, std::size_t max_calls);

/// Splits a model's output into the reply's text and the call's, as the bytes come. Text that
/// may still be the start of the opener is held back (neither part) until it is known; once the
/// opener is seen, it and everything after it are the call's. At the end, flush() gives back
/// what was held (the output ended inside a possible opener: reply text).
class call_splitter {
public:
    explicit call_splitter(call_opener opener)
        : opener_(std::move(opener)) {}

    struct parts {
        std::string reply; ///< text for the reply, in order
        std::string call;  ///< text of the call (from its opener on)
    };
    /// The next bytes of the output.
    parts feed(std::string_view bytes);
    /// The end of the output: what was held back, as reply text.
    parts flush();

    [[nodiscard]] bool opened() const noexcept { return state_ == state::opened; }
    /// Of the call text so far, where the call's value starts (past the opener unless the opener
    /// is the value's first bytes).
    [[nodiscard]] std::size_t value_offset() const noexcept {
        return opener_.at_start ? 0 : opener_.text.size();
    }
    [[nodiscard]] const call_opener& opener() const noexcept { return opener_; }

private:
    enum class state { looking, opened, never };
    call_opener opener_;
    state state_ = state::looking;
    std::string held_; ///< bytes that may begin the opener (or leading whitespace, at_start)
};

} // namespace bitnet::model::constrain
