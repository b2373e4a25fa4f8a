#include "http/turn_reply.hpp"

#include <utility>

namespace bitnet::http {

turn_reply settle_turn(turn_output out, msg::finish_reason finish, bool drain_cut) {
    turn_reply r;
    r.finish = finish;
    r.drain_cut = drain_cut;
    switch (out.mode) {
    case turn_mode::text:
        r.text = std::move(out.text);
        break;
    case turn_mode::forced_call:
        if (auto calls = parse_forced_calls(out.text, out.tool_name))
            r.calls = std::move(*calls);
        r.called = !r.calls.empty() && !r.cut();
        r.call_text = std::move(out.text);
        break;
    case turn_mode::auto_calls:
        r.text = std::move(out.text);
        if (out.call_text.empty())
            break;
        if (r.cut())
            break; // a call cut short is no call and no text, as a forced one
        if (auto calls = parse_auto_calls(out.call_text)) {
            r.calls = std::move(*calls);
            r.called = true;
            r.call_text = std::move(out.call_text);
            break;
        }
        // The model wrote the opener but no call (stop strings apply to an auto turn): text.
        r.text += out.call_text;
        r.unsent_text = std::move(out.call_text);
        break;
    }
    return r;
}

} // namespace bitnet::http
