// The native API (POST /v1/inference and /v1/inference/stream) as a family_turn: a stream of
// `token` events and one `done` event (an `error` event first when the drain cut it); a plain
// reply with the token ids and, when asked, their logprobs (http/openapi.json has the shapes).
#pragma once

#include "http/family_turn.hpp"

#include <vector>

namespace bitnet::http {

class native_turn final : public family_turn {
public:
    /// `token_logprob`: a stream's token events carry the chosen token's logprob; `logprobs`: a
    /// plain reply lists them.
    native_turn(bool token_logprob, bool logprobs);

    void open(frame_writer& out, const turn_facts& t) override;
    void token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) override;
    void gather(const turn_facts& t, const msg::token_event& ev) override;
    void end(frame_writer& out, const turn_facts& t, const turn_reply& r,
             const msg::completion& c) override;
    void fail(frame_writer& out, const turn_facts& t, const api_error& e) override;
    [[nodiscard]] std::string body(const turn_facts& t, const turn_reply& r,
                                   const msg::completion& c) override;

private:
    bool token_logprob_;
    bool logprobs_;
    std::vector<msg::token_event> tokens_; ///< a plain reply's generated tokens
};

} // namespace bitnet::http
