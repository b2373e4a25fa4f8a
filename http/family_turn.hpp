// One request's API family as the session drives it: the family renders one turn, plain or
// streamed, and keeps its own state for it. The session (http/routes/) moves the bytes and keeps
// what every family shares: ids, counts, timings, the turn settled at its end (turn_reply.hpp).
#pragma once

#include "http/errors.hpp"
#include "http/stream_framing.hpp"
#include "http/turn_reply.hpp"
#include "messages/types.hpp"

#include <cstdint>
#include <string>

namespace bitnet::http {

/// A stream's frames on their way out, in the framing the family chose (stream_framing).
class frame_writer {
public:
    virtual ~frame_writer() = default;
    /// One frame: named `name` (SSE's `event:` line), or data alone when `name` is null; in
    /// NDJSON, `data` on a line of its own (the name is not sent).
    virtual void frame(const char* name, const std::string& data) = 0;
};

/// What the session knows of the request in progress, the same for every family.
struct turn_facts {
    std::string req_id;
    std::string model;        ///< the alias asked for, or the one that served it
    std::int64_t created = 0; ///< Unix seconds when the request came
    std::uint32_t prompt_tokens = 0;
    turn_mode mode = turn_mode::text;
    std::string tool_name;  ///< forced_call: the one function named, if any
    bool drain_cut = false; ///< the server's drain deadline ended the request
    bool has_stops = false; ///< the request had stop strings
};

/// A family's side of one turn.
class family_turn {
public:
    virtual ~family_turn() = default;
    /// How this family's streams are framed.
    [[nodiscard]] virtual stream_framing framing() const { return stream_framing::sse; }
    /// The stream's first frames, once admission accepted the request.
    virtual void open(frame_writer& out, const turn_facts& t) = 0;
    /// One token event's frames (`ev.token` < 0: text released at the end, no token).
    virtual void token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) = 0;
    /// A plain reply's token: what the body needs of it beyond the text the session gathers
    /// (logprobs, token ids; every choice's text when there are several).
    virtual void gather(const turn_facts& t, const msg::token_event& ev) {
        (void)t;
        (void)ev;
    }
    /// The prompt echo (OpenAI completions' `echo`), before any generated token: its frames when
    /// streaming (`out` null for a plain reply). Answers the echoed text, which the reply's text
    /// starts with.
    virtual std::string echo(frame_writer* out, const turn_facts& t, const msg::token_event& ev) {
        (void)out;
        (void)t;
        (void)ev;
        return {};
    }
    /// One of several choices (OpenAI's `n`) ended: its frames when streaming (`out` null for a
    /// plain reply). The last one's end comes to `end` or `body` with the usage of them all.
    virtual void choice_end(frame_writer* out, const turn_facts& t, const msg::completion& c) {
        (void)out;
        (void)t;
        (void)c;
    }
    /// The stream's last frames, the turn settled.
    virtual void end(frame_writer& out, const turn_facts& t, const turn_reply& r,
                     const msg::completion& c) = 0;
    /// A failure after the stream began: its frames in the family's shape.
    virtual void fail(frame_writer& out, const turn_facts& t, const api_error& e) = 0;
    /// A plain reply's body, the turn settled.
    [[nodiscard]] virtual std::string body(const turn_facts& t, const turn_reply& r,
                                           const msg::completion& c) = 0;
};

} // namespace bitnet::http
