#include "http/api_sampling.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <string>

namespace bitnet::http {

namespace json = boost::json;

namespace {

using model::sampling_params;

std::optional<api_error> read_penalty(const json::object& body, const char* name, float& out) {
    const auto* v = body.if_contains(name);
    if (!v || v->is_null())
        return std::nullopt;
    if (!v->is_number())
        return invalid_value(name, std::string(name) + " must be a number");
    const double d = v->to_number<double>();
    if (!(d >= -sampling_params::max_openai_penalty && d <= sampling_params::max_openai_penalty))
        return invalid_value(name, std::string(name) + " must be within -2..2 (0 = off)");
    out = static_cast<float>(d);
    return std::nullopt;
}

/// {"50256": -100, "9906": 5.5}: ids as decimal strings, biases in -100..100.
std::optional<api_error> read_logit_bias(const json::object& body, sampling_params& p) {
    const auto* v = body.if_contains("logit_bias");
    if (!v || v->is_null())
        return std::nullopt;
    const auto* o = v->if_object();
    if (!o)
        return invalid_value("logit_bias", "logit_bias must be an object of token ids (as "
                                           "strings) to biases in -100..100");
    if (o->size() > sampling_params::max_logit_bias)
        return invalid_value("logit_bias", "logit_bias has " + std::to_string(o->size()) +
                                               " entries; at most 300 are taken");
    for (const auto& m : *o) {
        const std::string_view key = m.key();
        std::int32_t id = -1;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (ec != std::errc{} || end != key.data() + key.size() || id < 0 || key.empty())
            return invalid_value("logit_bias", "logit_bias key '" + std::string(key) +
                                                   "' is not a token id (a decimal integer)");
        if (!m.value().is_number())
            return invalid_value("logit_bias", "logit_bias value of token " + std::string(key) +
                                                   " must be a number in -100..100");
        const double b = m.value().to_number<double>();
        if (!(b >= -sampling_params::max_bias && b <= sampling_params::max_bias))
            return invalid_value("logit_bias", "logit_bias value of token " + std::string(key) +
                                                   " must be within -100..100");
        p.logit_bias.push_back({id, static_cast<float>(b)});
    }
    std::sort(p.logit_bias.begin(), p.logit_bias.end(),
              [](const auto& a, const auto& b) { return a.token < b.token; });
    for (std::size_t i = 1; i < p.logit_bias.size(); ++i)
        if (p.logit_bias[i].token == p.logit_bias[i - 1].token)
            return invalid_value("logit_bias", "logit_bias names token " +
                                                   std::to_string(p.logit_bias[i].token) +
                                                   " twice (\"7\" and \"07\" are one id)");
    return std::nullopt;
}

} // namespace

std::optional<api_error> read_logit_shaping(const json::object& body, inference_input& in) {
    auto& p = in.params;
    if (auto e = read_penalty(body, "presence_penalty", p.presence_penalty))
        return e;
    if (auto e = read_penalty(body, "frequency_penalty", p.frequency_penalty))
        return e;
    if (auto e = read_logit_bias(body, p))
        return e;
    if (const auto* v = body.if_contains("ignore_eos"); v && !v->is_null()) {
        if (!v->is_bool())
            return invalid_value("ignore_eos", "ignore_eos must be true or false");
        p.ignore_eos = v->get_bool();
    }
    if (const auto* v = body.if_contains("min_tokens"); v && !v->is_null()) {
        if (!(v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= (1 << 20)) &&
            !(v->is_uint64() && v->get_uint64() <= (1u << 20)))
            return invalid_value("min_tokens", "min_tokens must be an integer within 0..1048576");
        p.min_tokens = static_cast<std::uint32_t>(v->to_number<std::int64_t>());
    }
    return std::nullopt;
}

std::optional<api_error> check_logit_shaping(const inference_input& in) {
    const auto& p = in.params;
    if (p.min_tokens > in.max_tokens)
        return invalid_value("min_tokens", "min_tokens is " + std::to_string(p.min_tokens) +
                                               ", past max_tokens (" +
                                               std::to_string(in.max_tokens) + ")");
    if (!in.json_schema.empty() && (p.ignore_eos || p.min_tokens > 0)) {
        const char* field = p.ignore_eos ? "ignore_eos" : "min_tokens";
        return invalid_value(field, std::string(field) +
                                        " cannot be combined with structured "
                                        "output (" +
                                        in.schema_param +
                                        "): a structured value ends with the end-of-generation "
                                        "token it would hold back");
    }
    return std::nullopt;
}

} // namespace bitnet::http
