#include "http/native_turn.hpp"

#include "http/api_render.hpp"

#include <utility>

namespace bitnet::http {

native_turn::native_turn(bool token_logprob, bool logprobs)
    : token_logprob_(token_logprob)
    , logprobs_(logprobs) {}

void native_turn::open(frame_writer&, const turn_facts&) {}

void native_turn::token(frame_writer& out, const turn_facts&, const msg::token_event& ev) {
    out.frame("token", native_token_event(ev, token_logprob_));
}

void native_turn::gather(const turn_facts&, const msg::token_event& ev) {
    if (ev.token >= 0)
        tokens_.push_back(ev);
}

void native_turn::end(frame_writer& out, const turn_facts& t, const turn_reply&,
                      const msg::completion& c) {
    if (t.drain_cut)
        out.frame("error", error_body(drain_error(), t.req_id));
    out.frame("done", native_done_event(c));
}

void native_turn::fail(frame_writer& out, const turn_facts& t, const api_error& e) {
    out.frame("error", error_body(e, t.req_id));
}

std::string native_turn::body(const turn_facts& t, const turn_reply& r, const msg::completion& c) {
    return native_body(t.req_id, c, r.text, tokens_, logprobs_);
}

} // namespace bitnet::http
