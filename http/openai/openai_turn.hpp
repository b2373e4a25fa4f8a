// OpenAI's chat completions and legacy completions as a family_turn: chat.completion(.chunk) and
// text_completion shapes, a logprobs object per token when asked, the completions prompt echo,
// several choices (n > 1, each streamed with its index, the usage once at the end), tool calls
// (a forced call to one function streamed as argument deltas; calls among several functions, or
// opened by the model, in one delta at the end), then [DONE].
#pragma once

#include "http/family_turn.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bitnet::http {

/// What an OpenAI request asked of its reply's shape (beside the text).
struct openai_options {
    bool chat = true;           ///< chat completions; false: legacy completions
    bool include_usage = false; ///< a stream's last chunk carries the usage
    bool logprobs = false;      ///< a logprobs object per token
    std::uint32_t n = 1;        ///< choices
    /// Completions `echo`: the prompt as sent when it was text (token ids are echoed as the
    /// model's tokenizer renders them).
    std::optional<std::string> echo_text;
};

class openai_turn final : public family_turn {
public:
    explicit openai_turn(openai_options opt);

    void open(frame_writer& out, const turn_facts& t) override;
    void token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) override;
    void gather(const turn_facts& t, const msg::token_event& ev) override;
    std::string echo(frame_writer* out, const turn_facts& t, const msg::token_event& ev) override;
    void choice_end(frame_writer* out, const turn_facts& t, const msg::completion& c) override;
    void end(frame_writer& out, const turn_facts& t, const turn_reply& r,
             const msg::completion& c) override;
    void fail(frame_writer& out, const turn_facts& t, const api_error& e) override;
    [[nodiscard]] std::string body(const turn_facts& t, const turn_reply& r,
                                   const msg::completion& c) override;

private:
    /// What one choice gathered for its reply (a plain reply's logprobs; with n > 1 its text).
    struct choice {
        std::string text;
        std::vector<std::string> lp_chat;
        std::array<std::vector<std::string>, 4> lp_cols;
        std::size_t text_offset = 0; ///< completions logprobs: where the next token's text starts
        std::optional<msg::finish_reason> finish;
    };

    /// The choice `ev` belongs to, its text (n > 1) grown by the event's; null when there is
    /// no such choice or it has ended.
    [[nodiscard]] choice* choice_of(const msg::token_event& ev);
    /// The completions logprobs columns of `ev`, `ch`'s text offset moved past it.
    [[nodiscard]] static std::array<std::string, 4> columns_of(choice& ch,
                                                               const msg::token_event& ev);
    void stream_chat_token(frame_writer& out, const turn_facts& t, const msg::token_event& ev,
                           const std::string& lps);
    void end_chat(frame_writer& out, const turn_facts& t, const turn_reply& r,
                  const msg::completion& c);
    /// n > 1: the stream's usage and end, or the reply of every choice.
    void end_choices(frame_writer& out, const turn_facts& t, const msg::completion& total);
    [[nodiscard]] std::string choices_body(const turn_facts& t, const msg::completion& total);

    openai_options opt_;
    std::vector<choice> choices_;
    bool tool_opened_ = false; ///< the stream sent the forced call's id and name
};

} // namespace bitnet::http
