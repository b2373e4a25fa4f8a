// The prompt echo of OpenAI `echo` requests: which prompt chunks ask the executor for every
// logits row (prompt_logprobs), the scores gathered across chunked prefill and preemption, and
// the one echo event sent before any generated token. Apart from batcher.cpp because it is one
// feature's bookkeeping, not the batcher's step loop.
#include "actors/batcher/batcher_internal.hpp"

namespace bitnet::actors::batcher_detail {

/// The bytes token `id` stands for, for logprobs; unused and reserved tokens have none, so their
/// vocabulary entry stands in.
std::string piece_of(const model::tokenizer& tok, msg::token_id id) {
    auto piece = tok.token_to_piece(id, true);
    return std::string(piece.empty() ? tok.token_text(id) : piece);
}

/// A chunk of a prompt_logprobs request asks for every row it holds that scores a prompt token
/// not scored yet (row p scores token p + 1), and names the prompt token after it; chunks of the
/// generated part, or recomputed after a preemption once scored, ask for nothing more.
void mark_prompt_rows(const live_request& lr, msg::step_chunk& sc) {
    if (!lr.req.prompt_logprobs || lr.echo_sent)
        return;
    const auto n_prompt = static_cast<std::uint32_t>(lr.req.prompt.size());
    const auto pos0 = sc.part.pos0;
    const auto end = pos0 + static_cast<std::uint32_t>(sc.part.tokens.size());
    if (n_prompt < 2 || pos0 + 1 >= n_prompt || end < lr.echo_next)
        return; // no row here scores a prompt token still unscored
    sc.part.all_logits = true;
    sc.next_token = end < n_prompt ? lr.req.prompt[end] : -1;
}

/// Takes one prompt token's score (in position order; repeats and strays are dropped).
void take_prompt_score(batcher_state& st, const msg::prompt_score& p) {
    auto it = st.live.find(p.seq);
    if (it == st.live.end())
        return;
    auto& lr = it->second;
    if (!lr.req.prompt_logprobs || lr.echo_sent || p.pos != lr.echo_next ||
        p.pos >= lr.req.prompt.size() || lr.req.prompt[p.pos] != p.token)
        return;
    auto& e = lr.echo;
    if (lr.echo_next == 1)
        e.n_top = static_cast<std::uint32_t>(p.top_tokens.size());
    e.logprobs.push_back(p.logprob);
    for (std::size_t i = 0; i < e.n_top; ++i) {
        // Every row has the same number of alternatives (min(k, n_vocab)); pad defensively.
        const bool have = i < p.top_tokens.size() && i < p.top_logprobs.size();
        const msg::token_id t = have ? p.top_tokens[i] : p.token;
        e.top_tokens.push_back(t);
        e.top_logprobs.push_back(have ? p.top_logprobs[i] : p.logprob);
        if (st.tokenizer)
            e.top_pieces.push_back(piece_of(*st.tokenizer, t));
    }
    ++lr.echo_next;
}

/// Sends a request's prompt echo once it is whole (every prompt token scored, when asked): its
/// tokens, their pieces, and the detokenized text with each token's offset in it.
void send_echo_when_ready(batcher_pointer self, msg::request_id id) {
    auto& st = self->state;
    auto it = st.live.find(id);
    if (it == st.live.end())
        return;
    auto& lr = it->second;
    const auto& prompt = lr.req.prompt;
    if (!lr.req.echo || lr.echo_sent || (lr.req.prompt_logprobs && lr.echo_next < prompt.size()))
        return;
    msg::token_event ev;
    ev.id = id;
    ev.token = -1;
    ev.prompt_tokens = static_cast<std::uint32_t>(prompt.size());
    ev.model = st.opt.model;
    ev.echo = std::move(lr.echo);
    auto& e = ev.echo;
    e.tokens = prompt;
    if (st.tokenizer) {
        model::token_stream text(*st.tokenizer);
        for (auto t : prompt) {
            e.pieces.push_back(piece_of(*st.tokenizer, t));
            e.text_offsets.push_back(static_cast<std::uint32_t>(e.text.size()));
            e.text += text.push(t);
        }
        e.text += text.flush();
    } else {
        e.pieces.assign(prompt.size(), std::string{});
        e.text_offsets.assign(prompt.size(), 0);
    }
    lr.echo_sent = true;
    emit_token(self, lr, std::move(ev));
}

} // namespace bitnet::actors::batcher_detail
