// The text routes: POST /v1/tokenize and POST /v1/detokenize. Their bodies and the "model" field
// are validated here; the work goes to admission, which hands it to the text actor of the
// version the alias serves, from a helper actor (no asio thread waits), and the answer comes back
// onto the connection's strand.
#include "http/routes/families.hpp"
#include "http/routes/session.hpp"
#include "messages/errors.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <limits>

namespace bitnet::http {

namespace json = boost::json;
namespace net = boost::asio;

/// Sends one text request to admission from a helper actor and runs `done` with its answer (or
/// the error) on this connection's strand.
template <class T, class... Ts>
void session::ask_text(const std::string& route, const char* field, std::function<void(T)> done,
                       Ts... xs) {
    auto ex = stream_.get_executor();
    auto self = this->self();
    auto on_answer = [ex, self, done](T answer) {
        net::post(ex, [self, done, answer = std::move(answer)]() mutable {
            self->safely("text", [&] { done(std::move(answer)); });
        });
    };
    auto on_error = [ex, self, route, field](caf::error e) {
        net::post(ex, [self, route, field, e = std::move(e)] {
            self->safely("text", [&] {
                auto err = msg::from_caf_error(e);
                if (!self->sees_all())
                    err = without_operator_detail(std::move(err));
                self->send_error(route, to_api_error(err, msg::retry_after_of(e), field), "-");
            });
        });
    };
    auto adm = srv_.admission;
    srv_.sys.spawn(
        [adm, on_answer, on_error](caf::event_based_actor* a, Ts... args) {
            a->request(adm, std::chrono::seconds(30), std::move(args)...)
                .then([on_answer](T& answer) { on_answer(std::move(answer)); },
                      [on_error](caf::error& e) { on_error(std::move(e)); });
        },
        std::move(xs)...);
}

/// The "model" field (default model when absent), or nullopt after a 400.
std::optional<std::string> session::model_field(const std::string& route, const json::object& o) {
    const auto* m = o.if_contains("model");
    if (!m || m->is_null())
        return srv_.opt.default_model;
    if (!m->is_string()) {
        send_error(route, invalid_value("model", "model must be a string"), "-");
        return std::nullopt;
    }
    return std::string(m->get_string());
}

void session::do_tokenize(const std::string& body) {
    const std::string route = "/v1/tokenize";
    auto o = body_object(route, body);
    if (!o)
        return;
    const auto* text = o->if_contains("text");
    if (!text || !text->is_string())
        return send_error(route, invalid_value("text", "text must be a string"), "-");
    const auto add_bos = bool_field(route, *o, "add_bos", false);
    if (!add_bos)
        return;
    const auto special = bool_field(route, *o, "parse_special", false);
    if (!special)
        return;
    auto model = model_field(route, *o);
    if (!model)
        return;
    auto self = this->self();
    ask_text<std::vector<msg::token_id>>(
        route, "text",
        [self, route, m = *model](std::vector<msg::token_id> ids) {
            self->send_json(route, 200, tokenize_body(ids, m));
        },
        msg::tokenize_atom_v, *model,
        msg::tokenize_order{std::string(text->get_string()), *add_bos, *special});
}

void session::do_detokenize(const std::string& body) {
    const std::string route = "/v1/detokenize";
    auto o = body_object(route, body);
    if (!o)
        return;
    const auto* toks = o->if_contains("tokens");
    if (!toks || !toks->is_array())
        return send_error(route, invalid_value("tokens", "tokens must be an array of ids"), "-");
    std::vector<std::int32_t> ids;
    for (const auto& t : toks->get_array()) {
        if (!t.is_int64() || t.get_int64() < 0 ||
            t.get_int64() > std::numeric_limits<std::int32_t>::max())
            return send_error(route,
                              invalid_value("tokens", "tokens must hold token ids (integers "
                                                      ">= 0)"),
                              "-");
        ids.push_back(static_cast<std::int32_t>(t.get_int64()));
    }
    auto model = model_field(route, *o);
    if (!model)
        return;
    auto self = this->self();
    ask_text<std::string>(
        route, "tokens",
        [self, route, m = *model](std::string text) {
            self->send_json(route, 200, detokenize_body(text, m));
        },
        msg::detokenize_atom_v, *model, std::move(ids));
}

namespace {

/// The chat a parsed request holds, as the text side renders it (its messages, the tools and
/// chat_template_kwargs its template sees), moved out of `in`.
msg::text_prompt chat_prompt_of(inference_input& in) {
    msg::text_prompt p;
    p.form = msg::prompt_form::chat;
    p.messages = std::move(in.messages);
    p.add_bos = in.add_bos;
    p.tools_json = std::move(in.template_tools);
    p.kwargs_json = std::move(in.template_kwargs);
    return p;
}

} // namespace

void session::do_count_tokens(const std::string& body) {
    const std::string route = "/v1/messages/count_tokens";
    auto parsed = parse_count_tokens(body);
    if (auto* e = std::get_if<api_error>(&parsed))
        return send_error(route, *e, "-");
    auto& in = std::get<inference_input>(parsed);
    auto p = chat_prompt_of(in);
    const auto model = in.model.empty() ? srv_.opt.default_model : in.model;
    auto self = this->self();
    ask_text<std::vector<msg::token_id>>(
        route, "messages",
        [self, route](std::vector<msg::token_id> ids) {
            self->send_json(route, 200, R"({"input_tokens":)" + std::to_string(ids.size()) + "}");
        },
        msg::encode_atom_v, model, std::move(p));
}

/// POST /apply-template (llama.cpp's route): a chat request's prompt as the serving version's
/// template renders it, not tokenized and not run. For debugging a template: the body is a chat
/// completions request, checked as one.
void session::do_apply_template(const std::string& body) {
    const std::string route = "/apply-template";
    auto parsed = parse_inference(body, api_family::chat);
    if (auto* e = std::get_if<api_error>(&parsed))
        return send_error(route, *e, "-");
    auto& in = std::get<inference_input>(parsed);
    auto p = chat_prompt_of(in);
    const auto model = in.model.empty() ? srv_.opt.default_model : in.model;
    auto self = this->self();
    ask_text<std::string>(
        route, "messages",
        [self, route](std::string prompt) {
            boost::json::object o;
            o["prompt"] = std::move(prompt);
            self->send_json(route, 200, boost::json::serialize(o));
        },
        msg::render_atom_v, model, std::move(p));
}

} // namespace bitnet::http
