#include "actors/supervisor/text_actor.hpp"

#include "actors/cluster/peer_gate.hpp"
#include "common/memory_tables.hpp"
#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace bitnet::actors {

namespace {

/// BOS only when asked, the model expects it, and the vocabulary has one.
model::encode_options encode_opts(const model::tokenizer& tok, bool add_bos, bool parse_special) {
    model::encode_options opt;
    opt.add_bos = add_bos && tok.add_bos() && tok.bos().has_value();
    opt.parse_special = parse_special;
    return opt;
}

/// A chat's ids: each control marker the template wrote as its token, every other byte as text,
/// so a marker typed in a message is characters (a user or a tool result cannot open a turn).
/// A marker the vocabulary has no control token for stays text. The same ids as encoding the
/// whole text with control tokens parsed, whenever the messages hold no marker.
result<std::vector<msg::token_id>> encode_chat(const model::tokenizer& tok,
                                               const model::rendered_chat& chat, bool add_bos) {
    std::vector<msg::token_id> ids;
    if (add_bos)
        ids.push_back(*tok.bos());
    const std::string_view text = chat.text;
    const model::encode_options as_text; // control tokens not parsed
    std::size_t at = 0;
    const auto text_until = [&](std::size_t end) -> result<void> {
        if (end > at)
            BITNET_TRY(tok.encode_into(text.substr(at, end - at), as_text, ids));
        return {};
    };
    for (const auto& [begin, end] : chat.markers) {
        const auto id = tok.find_token(text.substr(begin, end - begin));
        if (!id || (tok.type_of(*id) != model::token_type::control &&
                    tok.type_of(*id) != model::token_type::user_defined))
            continue;
        BITNET_TRY(text_until(begin));
        ids.push_back(*id);
        at = end;
    }
    BITNET_TRY(text_until(text.size()));
    return ids;
}

/// Removes `marker` from the start of `chat` when the template wrote it there as a marker.
void drop_leading_marker(model::rendered_chat& chat, std::string_view marker) {
    if (marker.empty() || chat.markers.empty() || chat.markers.front().first != 0 ||
        chat.markers.front().second != marker.size() || !chat.text.starts_with(marker))
        return;
    chat.text.erase(0, marker.size());
    chat.markers.erase(chat.markers.begin());
    for (auto& [begin, end] : chat.markers) {
        begin -= marker.size();
        end -= marker.size();
    }
}

/// A chat prompt rendered by the version's template (its own, the operator's, or the built-in
/// form). Errors name "messages".
result<model::rendered_chat> render_chat(const text_options& t, const msg::text_prompt& p) {
    std::vector<model::chat_turn> turns;
    turns.reserve(p.messages.size());
    for (const auto& m : p.messages) {
        model::chat_turn turn{m.role, m.content, {}, m.name, m.tool_call_id};
        for (const auto& c : m.tool_calls)
            turn.calls.push_back({c.name, c.arguments, c.id});
        turns.push_back(std::move(turn));
    }
    auto rendered = t.formatter
                        ? t.formatter->render(turns, {true, p.tools_json, p.kwargs_json})
                        : result<model::rendered_chat>(model::render_chat_marked(turns, t.chat));
    if (!rendered)
        return error{rendered.error().value(), rendered.error().message, "messages"};
    return rendered;
}

} // namespace

result<std::string> render_prompt(const text_options& t, const msg::text_prompt& p) {
    if (p.form != msg::prompt_form::chat)
        return error{errc::invalid_argument, "only a chat (messages) is rendered by a template",
                     "messages"};
    auto rendered = render_chat(t, p);
    if (!rendered)
        return rendered.error();
    return std::move(rendered->text);
}

result<std::vector<msg::token_id>> encode_prompt(const text_options& t, const msg::text_prompt& p) {
    const char* field = p.form == msg::prompt_form::chat ? "messages" : "prompt";
    if (!t.tokenizer)
        return error{errc::invalid_argument,
                     "this server has no tokenizer for text prompts; send the prompt as token ids",
                     field};
    const auto opts = encode_opts(*t.tokenizer, p.add_bos, true);
    result<std::vector<msg::token_id>> ids = std::vector<msg::token_id>{};
    if (p.form == msg::prompt_form::chat) {
        auto rendered = render_chat(t, p);
        if (!rendered)
            return rendered.error();
        // A template that writes BOS itself, and a tokenizer that adds one: keep one, as
        // llama.cpp does.
        if (t.formatter && opts.add_bos)
            drop_leading_marker(*rendered, t.formatter->bos_token());
        // Messages are data (encode_chat); chat_content_special, for trusted deployments,
        // parses control tokens typed in them too, as llama.cpp and Transformers do.
        ids = t.special_in_content ? t.tokenizer->encode(rendered->text, opts)
                                   : encode_chat(*t.tokenizer, *rendered, opts.add_bos);
    } else {
        // A raw prompt is the client's own template: control tokens written in it become their
        // ids, as in llama.cpp's server.
        ids = t.tokenizer->encode(p.text, opts);
    }
    if (!ids)
        return error{ids.error().value(), ids.error().message, field};
    if (ids->empty())
        return error{errc::invalid_argument, "the prompt has no tokens", field};
    return ids;
}

result<std::vector<msg::token_id>> tokenize_text(const text_options& t, const std::string& text,
                                                 bool add_bos, bool parse_special) {
    if (!t.tokenizer)
        return error{errc::invalid_argument, "this server has no tokenizer loaded"};
    return t.tokenizer->encode(text, encode_opts(*t.tokenizer, add_bos, parse_special));
}

result<std::string> detokenize_ids(const text_options& t, const std::vector<msg::token_id>& ids) {
    if (!t.tokenizer)
        return error{errc::invalid_argument, "this server has no tokenizer loaded"};
    const auto& tok = *t.tokenizer;
    for (auto id : ids)
        if (id < 0 || id >= tok.n_vocab())
            return error{errc::invalid_argument, "token id " + std::to_string(id) +
                                                     " is outside the vocabulary (0.." +
                                                     std::to_string(tok.n_vocab() - 1) + ")"};
    return tok.decode(ids);
}

namespace {

/// The answer of `f` (a result), or an internal error when it throws: an exception must not end
/// the actor (and, through the link, its batcher) for one request.
template <class F>
auto guarded(F f) -> caf::result<typename decltype(f())::value_type> {
    try {
        auto r = f();
        if (!r)
            return msg::to_caf_error(r.error());
        return std::move(*r);
    } catch (const std::exception& e) {
        return msg::to_caf_error(errc::internal, std::string("the text side failed: ") + e.what());
    }
}

msg::text_actor::behavior_type text_fn(msg::text_actor::pointer self, text_options opt,
                                       msg::batcher_actor batcher) {
    if (batcher)
        self->link_to(batcher);
    // Peers tokenize here for the requests they place on this node's batcher: only members
    // with the router role may (actors/cluster/peer_gate.hpp).
    // Counted while its behavior (which every handler below shares) lives: a version that went
    // leaves no text side behind (memory::live_count).
    auto counted = std::make_shared<memory::live_counter<memory::live_kind::text_side>>();
    auto admitted = [self, counted] {
        (void)counted;
        return peer_gate::process().allows(self->current_sender(), self->node(), role_router);
    };
    const auto refused = [] {
        peer_gate::process().refused();
        return msg::to_caf_error(errc::forbidden, "this text actor serves only its own node and "
                                                  "cluster members with the router role");
    };
    return {
        [opt, admitted, refused](msg::encode_atom, const msg::text_prompt& p)
            -> caf::result<std::vector<msg::token_id>> {
            if (!admitted())
                return refused();
            return guarded([&] { return encode_prompt(opt, p); });
        },
        [opt, admitted, refused](msg::render_atom,
                                 const msg::text_prompt& p) -> caf::result<std::string> {
            if (!admitted())
                return refused();
            return guarded([&] { return render_prompt(opt, p); });
        },
        [opt, admitted, refused](msg::tokenize_atom, const msg::tokenize_order& order)
            -> caf::result<std::vector<msg::token_id>> {
            if (!admitted())
                return refused();
            return guarded(
                [&] { return tokenize_text(opt, order.text, order.add_bos, order.parse_special); });
        },
        [opt, admitted, refused](msg::detokenize_atom, const std::vector<msg::token_id>& ids)
            -> caf::result<std::string> {
            if (!admitted())
                return refused();
            return guarded([&] { return detokenize_ids(opt, ids); });
        },
    };
}

} // namespace

msg::text_actor spawn_text_actor(caf::actor_system& sys, text_options opt,
                                 const msg::batcher_actor& batcher) {
    return sys.spawn<caf::detached>(text_fn, std::move(opt), batcher);
}

} // namespace bitnet::actors
