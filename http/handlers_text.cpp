// The text routes: POST /v1/tokenize and POST /v1/detokenize, through the model's text codec
// (server_options::text); validation of their bodies and the "model" field.
#include "http/session.hpp"

#include <boost/json/object.hpp>

#include <limits>

namespace bitnet::http {

namespace json = boost::json;

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
    if (!srv_.opt.text.tokenize)
        return send_error(route, invalid_value("text", "this server has no tokenizer loaded"), "-");
    auto ids = srv_.opt.text.tokenize(*model, text->get_string(), *add_bos, *special);
    if (!ids)
        return send_error(route, to_api_error(ids.error(), 0, "text"), "-");
    send_json(route, 200, tokenize_body(*ids, *model));
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
    if (!srv_.opt.text.detokenize)
        return send_error(route, invalid_value("tokens", "this server has no tokenizer loaded"),
                          "-");
    auto text = srv_.opt.text.detokenize(*model, ids);
    if (!text)
        return send_error(route, to_api_error(text.error(), 0, "tokens"), "-");
    send_json(route, 200, detokenize_body(*text, *model));
}

} // namespace bitnet::http
