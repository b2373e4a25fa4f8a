#include "http/api_guided.hpp"

#include "http/api_structured.hpp"

#include <boost/json.hpp>

#include <string>

namespace bitnet::http {

namespace json = boost::json;

namespace {

/// One guided form: the field it came from, and its kind ("json", "choice", "regex",
/// "json_object") with its value.
struct guided_form {
    std::string param;
    std::string kind;
    const json::value* value = nullptr;
};

/// The schema text of `f`, or the 400 naming f.param.
std::optional<api_error> schema_of(const guided_form& f, std::string& out) {
    const auto& v = *f.value;
    if (f.kind == "json_object") {
        if (!(v.is_bool() && v.get_bool()))
            return invalid_value(f.param, f.param + " must be true");
        out = R"({"type":"object"})";
    } else if (f.kind == "json") {
        // vLLM takes the schema as an object or as its JSON text.
        if (v.is_object() || v.is_bool()) {
            if (auto e = check_client_schema(v, f.param))
                return e;
            out = json::serialize(v);
        } else if (v.is_string()) {
            auto parsed = parse_request_json(v.get_string(), f.param);
            if (auto* e = std::get_if<api_error>(&parsed))
                return *e;
            const auto& schema = std::get<json::value>(parsed);
            if (!(schema.is_object() || schema.is_bool()))
                return invalid_value(f.param, f.param + " must be a JSON Schema (an object, or "
                                                        "its JSON text)");
            if (auto e = check_client_schema(schema, f.param))
                return e;
            out = json::serialize(schema);
        } else {
            return invalid_value(f.param, f.param + " must be a JSON Schema object");
        }
    } else if (f.kind == "choice") {
        const auto* a = v.if_array();
        if (!a || a->empty())
            return invalid_value(f.param, f.param + " must be a non-empty array of strings");
        for (const auto& c : *a)
            if (!c.is_string() || c.get_string().empty())
                return invalid_value(f.param, f.param + " must hold non-empty strings");
        out = json::serialize(json::object{{"x-bitnet-text", json::object{{"choice", *a}}}});
    } else { // regex
        if (!v.is_string() || v.get_string().empty())
            return invalid_value(f.param, f.param + " must be a non-empty string");
        out = json::serialize(json::object{{"x-bitnet-text", json::object{{"regex", v}}}});
    }
    return std::nullopt;
}

/// structured_outputs: {json | choice | regex | json_object}, plus vLLM's switches that change
/// nothing here (no whitespace is ever written, there is one backend).
std::optional<api_error> read_structured_outputs(const json::value& so,
                                                 std::vector<guided_form>& forms) {
    const auto* o = so.if_object();
    if (!o)
        return invalid_value("structured_outputs", "structured_outputs must be an object");
    for (const auto& m : *o) {
        const std::string key(m.key());
        const auto param = "structured_outputs." + key;
        if (m.value().is_null())
            continue;
        if (key == "json" || key == "choice" || key == "regex" || key == "json_object")
            forms.push_back({param, key, &m.value()});
        else if (key == "disable_any_whitespace" || key == "disable_fallback")
            continue;
        else
            return invalid_value(param, param + " is not served: structured_outputs takes json, "
                                                "choice, regex or json_object (grammars and "
                                                "structural tags are not)");
    }
    return std::nullopt;
}

} // namespace

std::optional<api_error> read_guided(const json::object& body, inference_input& in) {
    std::vector<guided_form> forms;
    for (const auto& [field, kind] :
         {std::pair{"guided_json", "json"}, std::pair{"guided_choice", "choice"},
          std::pair{"guided_regex", "regex"}})
        if (const auto* v = body.if_contains(field); v && !v->is_null())
            forms.push_back({field, kind, v});
    if (const auto* so = body.if_contains("structured_outputs"); so && !so->is_null())
        if (auto e = read_structured_outputs(*so, forms))
            return e;
    if (forms.empty())
        return std::nullopt;
    const auto& f = forms.front();
    if (forms.size() > 1)
        return invalid_value(forms[1].param, forms[1].param + " and " + f.param +
                                                 ": one structured output per request");
    if (!in.json_schema.empty())
        return invalid_value(f.param, f.param + " and " + in.schema_param +
                                          ": one structured output per request");
    if (auto e = schema_of(f, in.json_schema))
        return e;
    in.schema_param = f.param;
    return std::nullopt;
}

} // namespace bitnet::http
