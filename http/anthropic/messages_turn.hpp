// Anthropic's Messages API as a family_turn (http/anthropic/api_anthropic.hpp for the shapes): the
// stream's event sequence and the plain reply. A forced call to one function streams its arguments
// as input_json_delta events in a tool_use block; a call among several (or several parallel calls)
// comes whole at the end, a block each; a call cut short is no tool_use block (stop_reason
// max_tokens). A threaded request's reply, plain or streamed, is kept for the next continue by
// the `keep_thread` its session gave (http/routes/ joins threads to the reply store).
#pragma once

#include "http/family_turn.hpp"

#include <functional>
#include <string>

namespace bitnet::http {

class messages_turn final : public family_turn {
public:
    /// Keeps a finished reply's content blocks (a JSON array) for its thread's next continue.
    using thread_keeper = std::function<void(const std::string& content)>;

    /// `keep_thread`: empty when the request is not threaded.
    explicit messages_turn(thread_keeper keep_thread);

    void open(frame_writer& out, const turn_facts& t) override;
    void token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) override;
    void end(frame_writer& out, const turn_facts& t, const turn_reply& r,
             const msg::completion& c) override;
    void fail(frame_writer& out, const turn_facts& t, const api_error& e) override;
    [[nodiscard]] std::string body(const turn_facts& t, const turn_reply& r,
                                   const msg::completion& c) override;

private:
    /// message_start (with the prompt's token count, known with the first token), the first
    /// content block's start (text, or the forced call's tool_use) and a ping; once.
    void head(frame_writer& out, const turn_facts& t, std::uint32_t prompt_tokens);
    /// The reply's content blocks (a JSON array).
    [[nodiscard]] static std::string content(const turn_facts& t, const turn_reply& r);
    void keep(const turn_facts& t, const std::string& content) const;

    thread_keeper keep_thread_;
    bool head_sent_ = false;
};

} // namespace bitnet::http
