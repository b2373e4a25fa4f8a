#include "model/constrain/json_schema.hpp"

#include "model/constrain/schema_compiler.hpp"
#include "model/constrain/text_grammar.hpp"

#include <boost/json.hpp>

namespace bitnet::model::constrain {

using detail::compiler;
using json_numbers::mark_inexact_numbers;

namespace {

namespace json = boost::json;

/// Valid UTF-8, except that a 0xFF byte may open a string (the mark of an exact number that
/// http/ or mark_inexact_numbers put there; valid text never holds that byte).
bool utf8_but_marks(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<std::uint8_t>(s[i]);
        if (b < 0x80) {
            ++i;
            continue;
        }
        if (b == 0xFF) {
            if (i == 0 || s[i - 1] != '"')
                return false;
            ++i;
            continue;
        }
        const int more = b >= 0xF0 && b <= 0xF4   ? 3
                         : b >= 0xE0 && b <= 0xEF ? 2
                         : b >= 0xC2 && b <= 0xDF ? 1
                                                  : -1;
        if (more < 0 || i + static_cast<std::size_t>(more) >= s.size())
            return false;
        std::uint32_t cp = b & (more == 3 ? 0x07u : more == 2 ? 0x0Fu : 0x1Fu);
        for (int k = 1; k <= more; ++k) {
            const auto c = static_cast<std::uint8_t>(s[i + static_cast<std::size_t>(k)]);
            if ((c & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        if ((more == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        i += static_cast<std::size_t>(more) + 1;
    }
    return true;
}

} // namespace

void byte_trie::insert(const std::string& s, std::uint32_t id) {
    std::uint32_t at = 0;
    for (char ch : s) {
        const auto b = static_cast<std::uint8_t>(ch);
        auto& nx = nodes[at].next;
        auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint32_t{0}));
        if (it != nx.end() && it->first == b) {
            at = it->second;
            continue;
        }
        const auto child = static_cast<std::uint32_t>(nodes.size());
        nx.insert(it, {b, child});
        nodes.emplace_back();
        at = child;
    }
    if (!nodes[at].terminal)
        nodes[at].id = id;
    nodes[at].terminal = true;
}

std::uint32_t byte_trie::step(std::uint32_t at, std::uint8_t b) const noexcept {
    if (at == dead)
        return dead;
    const auto& nx = nodes[at].next;
    auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint32_t{0}));
    return it != nx.end() && it->first == b ? it->second : dead;
}

result<grammar> compile_json_schema(std::string_view schema_json, const cancel_token* cancel) {
    if (schema_json.size() > limits::max_schema_bytes)
        return limit_error("max_schema_bytes", limits::max_schema_bytes,
                           "the schema is " + std::to_string(schema_json.size()) + " bytes");
    if (!utf8_but_marks(schema_json))
        return error{errc::invalid_argument, "the schema is not valid UTF-8"};
    json::parse_options opt;
    opt.max_depth = limits::max_schema_nesting + limits::server_wrapper_nesting;
    opt.allow_invalid_utf8 = true; // checked above; the marks of exact numbers are 0xFF bytes
    boost::system::error_code ec;
    json::value root = json::parse(schema_json, ec, {}, opt);
    if (ec == json::error::too_deep)
        return limit_error("max_schema_nesting", limits::max_schema_nesting,
                           "the schema document nests objects and arrays deeper than that (and "
                           "the " +
                               std::to_string(limits::server_wrapper_nesting) +
                               " levels a server's wrapper may add)");
    if (ec)
        return error{errc::invalid_argument, "the schema is not valid JSON: " + ec.message()};
    if (is_text_spec(root)) // guided choice or regex over plain text, from http/
        return compile_text_grammar(root);
    if (auto marked = mark_inexact_numbers(schema_json)) {
        root = json::parse(*marked, ec, {}, opt);
        if (ec)
            return error{errc::internal, "the schema's exact numbers: " + ec.message()};
    }
    const compile_budget budget{std::chrono::steady_clock::now() +
                                    std::chrono::milliseconds(limits::max_compile_ms),
                                cancel};
    auto g = compiler(root, budget).run();
    // Paths are built from the client's names (each cut to an excerpt) and may still add up:
    // the message quotes at most a short stretch of what the client sent.
    if (!g && g.error().message.size() > 600) {
        auto e = g.error();
        e.message = cut_utf8(e.message, 600);
        return e;
    }
    return g;
}

grammar any_object_grammar() {
    const json::value none;
    const compile_budget budget{std::chrono::steady_clock::time_point::max(), nullptr};
    compiler c(none, budget);
    const auto root = c.any_object();
    auto origin = c.origin();
    auto g = c.take();
    g.root = root;
    (void)finish_grammar(g, origin, budget);
    return g;
}

} // namespace bitnet::model::constrain
