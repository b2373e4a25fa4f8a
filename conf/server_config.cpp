#include "conf/server_config.hpp"

#include "common/peer_roles.hpp"
#include "common/placement_name.hpp"
#include "conf/cluster_rules.hpp"
#include "conf/config_fields.hpp"
#include "conf/host_port.hpp"
#include "conf/tls_rules.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <system_error>
#include <variant>

namespace bitnet::conf {
namespace {

using detail::fail;

namespace json = boost::json;

using detail::dbl_field;
using detail::field;
using detail::fields;
using detail::find_field;
using detail::k_u32_max;
using detail::list_field;
using detail::models_field;
using detail::str_field;
using detail::u32_field;
using detail::u64_field;

/// `what` without the value it quotes: the text after ", got " and every '...' stretch.
std::string without_values(std::string what) {
    if (auto got = what.find(", got "); got != std::string::npos)
        what.resize(got);
    for (auto open = what.find('\''); open != std::string::npos; open = what.find('\'', open + 1)) {
        const auto close = what.find('\'', open + 1);
        if (close == std::string::npos)
            break;
        what.replace(open, close - open + 1, "<redacted>");
    }
    return what;
}

error bad(std::string_view key, std::string_view origin, const std::string& what) {
    // A secret key's value never appears in a message (it may end up in a log or a terminal).
    const auto* f = find_field(key);
    const bool secret = f != nullptr && f->secret == detail::secrecy::secret;
    return {errc::invalid_argument, "config key '" + std::string(key) + "' (from " +
                                        std::string(origin) +
                                        "): " + (secret ? without_values(what) : what)};
}

/// The form a text key's value must have, checked as the value is set so the error names where
/// it came from; an empty value means "unset" and always passes. Returns what is wrong, or "".
/// An origin as browsers send it: "*", or scheme://host[:port] with no path (no trailing '/').
std::string cors_origin_problem(std::string_view value) {
    if (value == "*")
        return {};
    const auto scheme = value.find("://");
    const bool web = value.rfind("http://", 0) == 0 || value.rfind("https://", 0) == 0;
    if (!web || scheme + 3 >= value.size() ||
        value.find_first_of("/?# ", scheme + 3) != std::string_view::npos)
        return "'" + std::string(value) +
               "' is not an origin: * or scheme://host[:port] (http or https, no path, no "
               "trailing '/')";
    return {};
}

std::string text_problem(std::string_view key, std::string_view value) {
    if (value.empty())
        return {};
    if (key == "node_name")
        return is_valid_node_name(value)
                   ? std::string{}
                   : "'" + std::string(value) + "' is not 1..64 letters, digits, '.', '_' or '-'";
    if (key == "devices")
        return placement_name_problem(value);
    if (key == "cors_allowed_origins")
        return cors_origin_problem(value);
    if (key == "trusted_proxies")
        return trusted_proxy_problem(value);
    if (key == "cluster_roles") {
        auto roles = parse_roles(value);
        return roles ? std::string{} : roles.error().message;
    }
    if (key == "cluster_listen" || key == "cluster_join") {
        auto hp = parse_host_port(value);
        if (!hp)
            return hp.error().message;
        // A peer to connect to needs its real port; only a listener may ask for an ephemeral one.
        if (key == "cluster_join" && hp->port == 0)
            return "'" + std::string(value) + "' has port 0 (only a listener may use port 0)";
    }
    return {};
}

result<void> check_text(std::string_view key, std::string_view origin, std::string_view value) {
    if (auto why = text_problem(key, value); !why.empty())
        return bad(key, origin, why);
    return {};
}

/// Keys whose flag may stand alone, meaning 1 (`--cluster-insecure`); a following "0" or "1"
/// is still taken as the value.
bool is_switch(std::string_view key) {
    return key == "cluster_insecure" || key == "cluster_insecure_acknowledged" ||
           key == "cluster_shared_certificate";
}

result<std::uint64_t> check_range(const field& f, std::string_view origin, std::uint64_t v) {
    if (v < f.min || v > f.max)
        return bad(f.key, origin,
                   std::to_string(v) + " is outside " + std::to_string(f.min) + ".." +
                       std::to_string(f.max));
    return v;
}

result<std::uint64_t> parse_u64(const field& f, std::string_view origin, std::string_view s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
        return bad(f.key, origin, "'" + std::string(s) + "' is not a non-negative integer");
    return check_range(f, origin, v);
}

std::vector<std::string> split_list(std::string_view s) {
    std::vector<std::string> out;
    while (!s.empty()) {
        auto comma = s.find(',');
        auto item = s.substr(0, comma);
        if (!item.empty())
            out.emplace_back(item);
        if (comma == std::string_view::npos)
            break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

/// "alias=path" or a bare path (alias = file name without directory and extension).
model_entry parse_model(std::string_view s) {
    if (auto eq = s.find('='); eq != std::string_view::npos)
        return {std::string(s.substr(0, eq)), std::string(s.substr(eq + 1)), std::nullopt};
    auto name =
        s.substr(s.find_last_of('/') == std::string_view::npos ? 0 : s.find_last_of('/') + 1);
    if (auto dot = name.rfind('.'); dot != std::string_view::npos && dot > 0)
        name = name.substr(0, dot);
    return {std::string(name), std::string(s), std::nullopt};
}

/// Sets one key from text (environment variable or flag).
result<void> set_from_text(server_config& cfg, const field& f, std::string_view origin,
                           std::string_view text) {
    struct visitor {
        server_config& cfg;
        const field& f;
        std::string_view origin;
        std::string_view text;
        result<void> operator()(u32_field m) const {
            auto v = parse_u64(f, origin, text);
            BITNET_TRY(v);
            cfg.*m = static_cast<std::uint32_t>(*v);
            return {};
        }
        result<void> operator()(u64_field m) const {
            auto v = parse_u64(f, origin, text);
            BITNET_TRY(v);
            cfg.*m = *v;
            return {};
        }
        result<void> operator()(str_field m) const {
            BITNET_TRY(check_text(f.key, origin, text));
            cfg.*m = std::string(text);
            return {};
        }
        result<void> operator()(dbl_field m) const {
            const std::string t(text);
            char* end = nullptr;
            const double v = std::strtod(t.c_str(), &end);
            if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v))
                return bad(f.key, origin, "expected a number, got '" + t + "'");
            cfg.*m = v;
            return {};
        }
        result<void> operator()(list_field m) const {
            auto items = split_list(text);
            for (const auto& item : items)
                BITNET_TRY(check_text(f.key, origin, item));
            cfg.*m = std::move(items);
            return {};
        }
        result<void> operator()(models_field) const {
            cfg.models.clear();
            for (const auto& item : split_list(text))
                cfg.models.push_back(parse_model(item));
            // A single model given on its own becomes the default, whatever the file said.
            if (cfg.models.size() == 1)
                cfg.default_model = cfg.models.front().alias;
            return {};
        }
    };
    return std::visit(visitor{cfg, f, origin, text}, f.target);
}

/// Sets one key from a JSON value (the file layer); types must match exactly.
result<void> set_from_json(server_config& cfg, const field& f, std::string_view origin,
                           const json::value& v) {
    auto as_u64 = [&]() -> result<std::uint64_t> {
        if (v.is_uint64())
            return check_range(f, origin, v.get_uint64());
        if (v.is_int64() && v.get_int64() >= 0)
            return check_range(f, origin, static_cast<std::uint64_t>(v.get_int64()));
        return bad(f.key, origin, "expected a non-negative integer, got " + json::serialize(v));
    };
    auto as_strings = [&]() -> result<std::vector<std::string>> {
        if (!v.is_array())
            return bad(f.key, origin, "expected an array of strings");
        std::vector<std::string> out;
        for (const auto& e : v.get_array()) {
            if (!e.is_string())
                return bad(f.key, origin,
                           "expected an array of strings, got " + json::serialize(e));
            BITNET_TRY(check_text(f.key, origin, e.get_string()));
            out.emplace_back(e.get_string());
        }
        return out;
    };
    if (auto* m = std::get_if<u32_field>(&f.target)) {
        auto x = as_u64();
        BITNET_TRY(x);
        cfg.** m = static_cast<std::uint32_t>(*x);
    } else if (auto* m64 = std::get_if<u64_field>(&f.target)) {
        auto x = as_u64();
        BITNET_TRY(x);
        cfg.** m64 = *x;
    } else if (auto* ms = std::get_if<str_field>(&f.target)) {
        if (!v.is_string())
            return bad(f.key, origin, "expected a string, got " + json::serialize(v));
        BITNET_TRY(check_text(f.key, origin, v.get_string()));
        cfg.** ms = std::string(v.get_string());
    } else if (auto* md = std::get_if<dbl_field>(&f.target)) {
        if (!v.is_number())
            return bad(f.key, origin, "expected a number, got " + json::serialize(v));
        cfg.** md = v.to_number<double>();
    } else if (auto* ml = std::get_if<list_field>(&f.target)) {
        auto x = as_strings();
        BITNET_TRY(x);
        cfg.** ml = std::move(*x);
    } else {
        if (!v.is_array())
            return bad(f.key, origin, "expected an array of {\"alias\",\"path\"} objects");
        std::vector<model_entry> models;
        for (const auto& e : v.get_array()) {
            const auto* o = e.if_object();
            const json::value* alias = o ? o->if_contains("alias") : nullptr;
            const json::value* path = o ? o->if_contains("path") : nullptr;
            if (!alias || !path || !alias->is_string() || !path->is_string())
                return bad(f.key, origin,
                           "each entry needs string \"alias\" and \"path\", got " +
                               json::serialize(e));
            for (const auto& kv : *o)
                if (kv.key() != "alias" && kv.key() != "path" && kv.key() != "draft_model")
                    return bad(f.key, origin,
                               "an entry's keys are \"alias\", \"path\" and \"draft_model\", "
                               "not \"" +
                                   std::string(kv.key()) + "\"");
            model_entry entry{std::string(alias->get_string()), std::string(path->get_string()),
                              std::nullopt};
            if (const auto* d = o->if_contains("draft_model")) {
                if (!d->is_string())
                    return bad(f.key, origin,
                               "an entry's \"draft_model\" is a path, or \"\" for none; got " +
                                   json::serialize(*d));
                BITNET_TRY(check_text(f.key, origin, d->get_string()));
                entry.draft_model = std::string(d->get_string());
            }
            models.push_back(std::move(entry));
        }
        cfg.models = std::move(models);
    }
    return {};
}

std::string env_name(std::string_view key) {
    std::string out = "BITNET_";
    for (char c : key)
        out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    return out;
}

std::string flag_name(std::string_view key) {
    std::string out = "--";
    for (char c : key)
        out.push_back(c == '_' ? '-' : c);
    return out;
}

result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error{errc::io_error, "cannot open config file '" + path + "'"};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The command-line contract's short flags (issue 4) as config keys; others are the key itself.
std::string canonical_flag(const std::string& name) {
    static const std::pair<std::string_view, std::string_view> aliases[] = {
        {"model", "models"},
        {"host", "listen_address"},
        {"threads", "n_threads"},
        {"max_seqs", "max_batch_seqs"},
        {"max_waiting", "max_waiting_requests"},
        {"api_key", "api_keys"},
        {"admin_key", "admin_api_keys"},
        {"join", "cluster_join"},
    };
    for (const auto& [from, to] : aliases)
        if (name == from)
            return std::string(to);
    return name;
}

/// Finds `--config FILE` / `--config=FILE` among the flags.
std::optional<std::string> config_flag(const std::vector<std::string>& args) {
    std::optional<std::string> out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--config" && i + 1 < args.size())
            out = args[i + 1];
        else if (args[i].rfind("--config=", 0) == 0)
            out = args[i].substr(9);
    }
    return out;
}

} // namespace

const model_entry* server_config::default_entry() const noexcept {
    if (models.empty())
        return nullptr;
    if (default_model.empty())
        return &models.front();
    for (const auto& m : models)
        if (m.alias == default_model)
            return &m;
    return nullptr;
}

env_lookup process_env() {
    return [](std::string_view name) -> std::optional<std::string> {
        if (const char* v = std::getenv(std::string(name).c_str()))
            return std::string(v);
        return std::nullopt;
    };
}

result<void> apply_json(server_config& cfg, std::string_view json_text, std::string_view origin) {
    boost::system::error_code ec;
    json::value root = json::parse(json_text, ec);
    if (ec)
        return error{errc::invalid_argument,
                     std::string(origin) + ": not valid JSON (" + ec.message() + ")"};
    if (!root.is_object())
        return error{errc::invalid_argument, std::string(origin) + ": top level must be an object"};
    for (const auto& [k, v] : root.get_object()) {
        // Keys starting with '_' are comments (JSON has none of its own).
        if (!k.empty() && k.front() == '_')
            continue;
        const field* f = detail::find_file_key(k);
        if (!f)
            return error{errc::invalid_argument,
                         std::string(origin) + ": unknown config key '" + std::string(k) + "'"};
        BITNET_TRY(set_from_json(cfg, *f, origin, v));
    }
    return {};
}

std::vector<std::string> share_group_keys(std::string_view group) {
    std::vector<std::string> out;
    while (!group.empty()) {
        const auto bar = group.find('|');
        const auto part = group.substr(0, bar);
        if (!part.empty())
            out.emplace_back(part);
        if (bar == std::string_view::npos)
            break;
        group.remove_prefix(bar + 1);
    }
    return out;
}

result<void> validate(const server_config& cfg) {
    if (cfg.listen_address.empty())
        return fail("listen_address", "must not be empty");
    for (std::size_t i = 0; i < cfg.models.size(); ++i) {
        const auto& m = cfg.models[i];
        if (m.alias.empty() || m.path.empty())
            return fail("models",
                        "entry " + std::to_string(i) + " needs a non-empty alias and path");
        for (std::size_t j = 0; j < i; ++j)
            if (cfg.models[j].alias == m.alias)
                return fail("models", "alias '" + m.alias + "' appears twice");
    }
    if (!cfg.default_model.empty() && !cfg.models.empty() && !cfg.default_entry())
        return fail("default_model",
                    "'" + cfg.default_model + "' is not one of the configured model aliases");
    if (cfg.max_batch_seqs > cfg.max_batch_tokens)
        return fail("max_batch_seqs", std::to_string(cfg.max_batch_seqs) +
                                          " exceeds max_batch_tokens (" +
                                          std::to_string(cfg.max_batch_tokens) +
                                          "): every sequence in a step needs one token");
    static constexpr std::array<std::string_view, 7> levels{"trace", "debug",    "info", "warn",
                                                            "error", "critical", "off"};
    if (std::find(levels.begin(), levels.end(), cfg.log_level) == levels.end())
        return fail("log_level", "'" + cfg.log_level +
                                     "' is not one of trace|debug|info|warn|error|critical|off");
    if (cfg.greedy_screen != 0 && cfg.q8_logits != 0)
        return fail("greedy_screen", "screens the F16 logits; with q8_logits 1 there are none "
                                     "(set one of the two)");
    if (cfg.kv_cache_type != "f16" && cfg.kv_cache_type != "q8_0")
        return fail("kv_cache_type", "'" + cfg.kv_cache_type + "' is not one of f16|q8_0");
    if (cfg.speculative != "auto" && cfg.speculative != "off")
        return fail("speculative", "'" + cfg.speculative + "' is not one of auto|off");
    if (cfg.log_format != "text" && cfg.log_format != "json")
        return fail("log_format", "'" + cfg.log_format + "' is not one of text|json");
    if (!(cfg.otlp_sample_ratio >= 0.0 && cfg.otlp_sample_ratio <= 1.0))
        return fail("otlp_sample_ratio", "must be between 0 and 1");
    if (!cfg.otlp_endpoint.empty()) {
        const auto& e = cfg.otlp_endpoint;
        const auto scheme = e.rfind("http://", 0) == 0 ? 7u : e.rfind("https://", 0) == 0 ? 8u : 0u;
        if (scheme == 0 || e.size() == scheme || e[scheme] == '/' || e[scheme] == ':')
            return fail("otlp_endpoint",
                        "'" + e + "' must be an http:// or https:// URL with a host (OTLP/HTTP)");
    }
    for (const auto& h : cfg.otlp_headers)
        if (h.find('=') == std::string::npos || h.front() == '=')
            return fail("otlp_headers", "each item is name=value (e.g. authorization=Bearer x)");
    for (const auto& k : cfg.api_keys)
        if (k.size() < 8)
            return fail("api_keys", "keys must be at least 8 characters");
    for (const auto& k : cfg.admin_api_keys)
        if (k.size() < 8)
            return fail("admin_api_keys", "keys must be at least 8 characters");
    if (!cfg.metrics_api_key.empty() && cfg.metrics_api_key.size() < 8)
        return fail("metrics_api_key", "keys must be at least 8 characters");
    for (const auto& g : cfg.prefix_cache_share_groups)
        for (const auto& k : share_group_keys(g))
            if (std::find(cfg.api_keys.begin(), cfg.api_keys.end(), k) == cfg.api_keys.end())
                return fail("prefix_cache_share_groups",
                            "a group names a key that is not one of api_keys (groups are "
                            "keyA|keyB|..., each an API key)");
    if (cfg.devices.empty())
        return fail("devices", "must name at least one placement (auto, cpu, cuda, cuda:N or "
                               "sim:N); the default is auto");
    for (const auto& d : cfg.devices)
        if (auto why = placement_name_problem(d); !why.empty())
            return fail("devices", why);
    BITNET_TRY(detail::validate_cluster(cfg));
    return detail::validate_tls(cfg);
}

result<server_config> load_config(const config_sources& src) {
    server_config cfg;
    if (auto file = config_flag(src.args).has_value() ? config_flag(src.args) : src.file) {
        auto text = read_file(*file);
        BITNET_TRY(text);
        BITNET_TRY(apply_json(cfg, *text, *file));
    }
    if (src.env) {
        for (const auto& f : fields()) {
            auto name = env_name(f.key);
            if (auto v = src.env(name))
                BITNET_TRY(set_from_text(cfg, f, name, *v));
        }
        // BITNET_MODEL: the one-model shorthand, same syntax as --model.
        if (auto v = src.env("BITNET_MODEL"))
            BITNET_TRY(set_from_text(cfg, *find_field("models"), "BITNET_MODEL", *v));
    }
    std::optional<std::string> alias;
    for (std::size_t i = 0; i < src.args.size(); ++i) {
        std::string_view a = src.args[i];
        if (a.rfind("--", 0) != 0)
            return error{errc::invalid_argument, "unexpected argument '" + std::string(a) + "'"};
        std::string name(a.substr(2));
        std::optional<std::string> value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        }
        std::replace(name.begin(), name.end(), '-', '_');
        if (name == "print_config")
            continue; // an action of the executable, not a setting
        name = canonical_flag(name);
        if (!value && is_switch(name)) {
            const bool explicit_value =
                i + 1 < src.args.size() && (src.args[i + 1] == "0" || src.args[i + 1] == "1");
            value = explicit_value ? src.args[++i] : std::string("1");
        }
        if (!value) {
            if (i + 1 >= src.args.size())
                return error{errc::invalid_argument, "flag " + std::string(a) + " needs a value"};
            value = src.args[++i];
        }
        if (name == "config")
            continue; // already applied as the file layer
        if (name == "alias") {
            alias = *value;
            continue;
        }
        const field* f = find_field(name);
        if (!f)
            return error{errc::invalid_argument,
                         "unknown flag " + std::string(a) + " (see --help)"};
        BITNET_TRY(set_from_text(cfg, *f, flag_name(name), *value));
    }
    if (alias) {
        // --alias NAME names the one model given (the command-line contract's form).
        if (cfg.models.size() != 1)
            return error{errc::invalid_argument,
                         "--alias needs exactly one model (--model FILE), " +
                             std::to_string(cfg.models.size()) + " are configured"};
        if (cfg.default_model.empty() || cfg.default_model == cfg.models.front().alias)
            cfg.default_model = *alias;
        cfg.models.front().alias = *alias;
    }
    BITNET_TRY(validate(cfg));
    return cfg;
}

std::string to_json(const server_config& cfg) {
    json::object o;
    for (const auto& f : fields()) {
        const std::string key(f.key);
        if (auto* m = std::get_if<u32_field>(&f.target))
            o[key] = cfg.**m;
        else if (auto* m64 = std::get_if<u64_field>(&f.target))
            o[key] = cfg.**m64;
        else if (auto* ms = std::get_if<str_field>(&f.target))
            // A secret shows whether it is set, never what it is.
            o[key] = f.secret == detail::secrecy::secret && !(cfg.**ms).empty()
                         ? std::string("<redacted>")
                         : cfg.**ms;
        else if (auto* md = std::get_if<dbl_field>(&f.target))
            o[key] = cfg.**md;
        else if (auto* ml = std::get_if<list_field>(&f.target)) {
            json::array a;
            // Secrets (marked in the key table): show how many, not what.
            const bool secret = f.secret == detail::secrecy::secret;
            for (const auto& x : cfg.**ml)
                a.emplace_back(secret ? std::string("<redacted>") : x);
            o[key] = std::move(a);
        } else {
            json::array a;
            for (const auto& e : cfg.models) {
                json::object entry{{"alias", e.alias}, {"path", e.path}};
                if (e.draft_model)
                    entry["draft_model"] = *e.draft_model;
                a.push_back(std::move(entry));
            }
            o[key] = std::move(a);
        }
    }
    return json::serialize(o);
}

std::string usage() {
    std::string out =
        "usage: bitnet-server --model FILE [--alias NAME] [--host 127.0.0.1] [--port 8080]\n"
        "                     [--config FILE] [--threads N] [--max-seqs N] [--max-waiting N]\n"
        "                     [--api-key K] [--admin-key K] [--print-config] [flags]\n\n"
        "Short forms: --model = --models ([ALIAS=]PATH[,...]), --host = --listen-address,\n"
        "--threads = --n-threads, --max-seqs = --max-batch-seqs, --max-waiting =\n"
        "--max-waiting-requests, --api-key = --api-keys, --admin-key = --admin-api-keys,\n"
        "--join = --cluster-join. --cluster-insecure alone means --cluster-insecure 1.\n"
        "--print-config prints the effective configuration as JSON and exits.\n\n"
        "Every flag also reads from its environment variable; precedence: file < environment < "
        "flags.\n\n";
    for (const auto& f : fields()) {
        out +=
            "  " + flag_name(f.key) + "  (" + env_name(f.key) + ")  " + std::string(f.doc) + "\n";
    }
    return out;
}

} // namespace bitnet::conf
