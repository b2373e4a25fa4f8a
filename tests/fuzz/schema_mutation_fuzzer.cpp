// In-tree mutation fuzzer for structured output: JSON Schemas (the official test suite's, the
// abuse table's, and a few everyday ones) mutated byte by byte (with a dictionary of schema
// keywords) and structurally (wrapped in anyOf, $defs/$ref, arrays, required properties), then
// compiled and walked with random bytes through the byte matcher, and (every third schema) with
// random tokens through both real tokenizers, each token drawn uniformly among those the mask
// allows (temperature 1 over equal logits: the widest sampling can be). Properties checked per
// case: no crash (ASan in CI), the compile ends within its budget or with a clean error, every
// step and the case within a time and memory bound, and every value the matcher completes (a
// token walk: ended with an end-of-generation token) is written to OUT (JSON lines) for
// tests/fuzz/check_schema_outputs.py to validate with an independent JSON Schema validator,
// formats asserted.
// Usage: fuzz_schema SECONDS SEED OUT [SUITE_DIR [MODEL_GGUF LLAMA3_TOKENIZER_JSON]]; exits
// non-zero on a broken property.
#include "byte_mutator.hpp"
#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/json_schema.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/token_constraint.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "tools/hf_tokenizer_import.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

using namespace bitnet;
using namespace bitnet::model::constrain;
namespace json = boost::json;
using clk = std::chrono::steady_clock;

namespace {

std::vector<std::string> table_schemas() {
    std::vector<std::string> out = {
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","bc"]},"maxItems":3}},"required":["name"],"additionalProperties":false})",
        R"({"anyOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]})",
        R"({"anyOf":[{"type":"object","properties":{"c":{"$ref":"#"}},"additionalProperties":false},{"type":"object","properties":{"c":{"$ref":"#"}},"additionalProperties":false}]})",
        R"({"type":"integer","multipleOf":10000000000})",
        R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})",
        R"({"enum":[123456789012345678901234567890,1,12,"x",null,true,{"a":[1]}]})",
        R"({"type":"number","minimum":-1.5,"exclusiveMaximum":2.25})",
        R"({"type":"string","format":"date-time"})",
        R"({"type":"string","pattern":"^(a|b)*c{2,3}[^x-z]$"})",
        R"({"type":"array","prefixItems":[{"type":"boolean"},{"const":3}],"items":{"type":"number"}})",
        R"({"type":"string","format":"date"})",
        R"({"type":"string","format":"time"})",
        R"({"type":"string","format":"email"})",
        R"({"type":"string","format":"email","maxLength":20})",
        R"({"type":"string","format":"hostname"})",
        R"({"type":"string","format":"hostname","minLength":70,"maxLength":90})",
        R"({"type":"string","format":"uri","maxLength":30})",
        R"({"type":"string","format":"ipv6"})",
        R"({"type":"string","format":"ipv4"})",
        R"({"type":"string","format":"uuid"})",
        R"({"type":"string","pattern":"^[a-z]+@x\\.io$","maxLength":10})",
        R"({"type":"string","pattern":"^(ab)+$","minLength":5,"maxLength":9})",
        R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},"host":{"type":"string","format":"hostname","maxLength":12}},"required":["when","host"],"additionalProperties":false})",
    };
    std::string defs;
    for (int i = 0; i < 12; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"anyOf\":[{\"$ref\":\"#/$defs/d" +
                std::to_string(i + 1) + "\"},{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) +
                "\"}]},";
    out.push_back(
        R"({"$defs":{)" + defs +
        R"("d12":{"type":"array","items":{"$ref":"#/$defs/d0"},"maxItems":2}},"$ref":"#/$defs/d0"})");
    out.push_back(R"({"type":"string","pattern":")" + std::string(80, '(') + "a" +
                  std::string(80, ')') + "\"}");
    return out;
}

std::vector<std::string> suite_schemas(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec))
        return out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".json")
            continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        boost::system::error_code pec;
        const auto groups = json::parse(ss.str(), pec);
        if (pec || !groups.is_array())
            continue;
        for (const auto& g : groups.get_array())
            if (g.is_object() && g.get_object().contains("schema"))
                out.push_back(json::serialize(g.get_object().at("schema")));
    }
    return out;
}

/// A structural mutation: the schema inside one of the shapes recursion and reuse take.
std::string wrap(const std::string& s, std::mt19937_64& rng) {
    switch (rng() % 5) {
    case 0:
        return R"({"anyOf":[)" + s + "," + s + "]}";
    case 1:
        return R"({"$defs":{"a":)" + s + R"(},"$ref":"#/$defs/a"})";
    case 2:
        return R"({"type":"array","items":)" + s + R"(,"maxItems":3})";
    case 3:
        return R"({"type":"object","properties":{"p":)" + s +
               R"(,"q":{"$ref":"#"}},"required":["p"]})";
    default:
        return R"({"anyOf":[)" + s + R"(,{"type":"null"}]})";
    }
}

std::uint64_t max_rss_kib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<std::uint64_t>(ru.ru_maxrss);
}

struct walk_result {
    std::string text;
    bool complete = false;
    bool dead_end = false;
};

/// A random walk of at most `max_bytes` bytes, each chosen among those the matcher takes.
walk_result walk(const grammar& g, std::mt19937_64& rng, std::size_t max_bytes) {
    walk_result out;
    auto m = byte_matcher::start(g);
    for (std::size_t n = 0; n < max_bytes; ++n) {
        if (m.complete(g) && (m.finished() || rng() % 8 == 0))
            break;
        std::vector<std::pair<std::uint8_t, byte_matcher>> next;
        for (int b = 0; b < 256; ++b) {
            auto t = m;
            if (t.feed(g, static_cast<std::uint8_t>(b)))
                next.emplace_back(static_cast<std::uint8_t>(b), std::move(t));
        }
        if (next.empty()) {
            out.dead_end = !m.complete(g);
            break;
        }
        auto& pick = next[rng() % next.size()];
        out.text += static_cast<char>(pick.first);
        m = std::move(pick.second);
    }
    out.complete = m.complete(g);
    return out;
}

/// A random walk of at most `max_tokens` tokens, each drawn uniformly among those the mask
/// allows; complete when it drew an end-of-generation token. Stops early past `until`.
walk_result token_walk(const std::shared_ptr<const compiled_constraint>& c, std::mt19937_64& rng,
                       std::size_t max_tokens, clk::time_point until) {
    walk_result out;
    token_constraint tc(c);
    const auto& v = c->vocab();
    for (std::size_t n = 0; n < max_tokens && clk::now() < until; ++n) {
        auto mask = tc.allowed();
        if (!mask)
            return out; // past a mask budget: a clean error, not a value
        std::vector<std::int32_t> ids;
        for (std::int32_t id = 0; id < v.n_vocab; ++id)
            if (mask_has(**mask, id))
                ids.push_back(id);
        if (ids.empty()) {
            out.dead_end = true;
            return out;
        }
        const auto id = ids[rng() % ids.size()];
        if (std::find(v.eog.begin(), v.eog.end(), id) != v.eog.end()) {
            out.complete = tc.complete();
            return out;
        }
        if (!tc.accept(id)) {
            out.dead_end = true;
            return out;
        }
        out.text += v.pieces[static_cast<std::size_t>(id)];
    }
    return out;
}

/// The real tokenizers the token walks use: the default model's and Llama-3's (when given).
std::vector<std::pair<std::string, model::tokenizer>> load_tokenizers(int argc, char** argv) {
    std::vector<std::pair<std::string, model::tokenizer>> out;
    if (argc <= 6)
        return out;
    if (auto f = model::gguf_file::open(argv[5]))
        if (auto v = model::read_tokenizer_vocab(*f))
            if (auto t = model::tokenizer::create(*v))
                out.emplace_back("default", std::move(*t));
    // Its end-of-generation ids come from the tokenizer_config.json beside it.
    std::string config = argv[6];
    if (const auto at = config.rfind("tokenizer.json"); at != std::string::npos)
        config.replace(at, std::string("tokenizer.json").size(), "tokenizer_config.json");
    if (auto v = tools::import_hf_tokenizer_file(argv[6], config))
        if (auto t = model::tokenizer::create(*v))
            out.emplace_back("llama3", std::move(*t));
    if (out.size() != 2)
        std::cerr << "fuzz_schema: a tokenizer did not load; token walks use " << out.size()
                  << "\n";
    return out;
}

/// The mutator over the schema pool, with the fragments that stress the compiler most.
fuzz::byte_mutator schema_mutator(std::uint64_t seed) {
    return fuzz::byte_mutator(seed, {R"("$ref":"#")", R"("anyOf":[)", R"({"type":"object"})",
                                     R"("pattern":"(a*)*b")", R"("multipleOf":1e10)",
                                     R"("enum":[1,12])", R"("minimum":-9223372036854775808)",
                                     "123456789012345678901234567890", R"("format":"uuid")",
                                     R"("required":["a"])", R"("additionalProperties":false)",
                                     R"("maxLength":0)", R"("items":{"$ref":"#"})", "[[[[[["});
}

/// Three byte walks of a compiled schema; each whole value goes to `out` with its schema.
template <class Grammar, class Rng>
void write_values(const Grammar& g, const std::string& text, Rng& rng, std::ofstream& out,
                  std::uint64_t& outputs, std::uint64_t& dead_ends) {
    for (int w = 0; w < 3; ++w) {
        const auto r = walk(g, rng, 160);
        dead_ends += r.dead_end ? 1 : 0;
        if (r.complete && !r.text.empty()) {
            json::object line{{"schema", text}, {"instance", r.text}};
            out << json::serialize(line) << "\n";
            ++outputs;
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::cerr << "usage: fuzz_schema SECONDS SEED OUT [SUITE_DIR [MODEL_GGUF "
                     "LLAMA3_TOKENIZER_JSON]]\n";
        return 2;
    }
    const double seconds = std::stod(argv[1]);
    const std::uint64_t seed = std::stoull(argv[2]);
    std::ofstream out(argv[3]);
    const auto tokenizers = load_tokenizers(argc, argv);
    std::uint64_t token_walks = 0, token_values = 0;
    auto pool_text = table_schemas();
    for (auto& s : suite_schemas(argc > 4 ? argv[4] : ""))
        pool_text.push_back(std::move(s));
    std::vector<std::vector<std::uint8_t>> pool;
    for (const auto& s : pool_text)
        pool.emplace_back(s.begin(), s.end());
    auto mut = schema_mutator(seed);
    std::mt19937_64 rng(seed);
    // Bounds per case (generous for ASan's slowdown): the compile's own budget plus slack, and
    // what one case may add to the peak RSS.
    const auto case_limit = std::chrono::milliseconds(3 * limits::max_compile_ms + 5000);
    const std::uint64_t rss_limit_kib = 1u << 20; // 1 GiB
    const auto deadline = clk::now() + std::chrono::duration<double>(seconds);
    std::uint64_t cases = 0, compiled = 0, outputs = 0, dead_ends = 0, refused = 0;
    std::vector<std::uint8_t> current = pool.at(0);
    while (clk::now() < deadline) {
        ++cases;
        if (mut.pick(4) != 0)
            current = pool[mut.pick(pool.size())];
        std::string text;
        if (rng() % 3 == 0) {
            text = wrap(std::string(current.begin(), current.end()), rng);
        } else {
            current = mut.mutate(std::move(current), pool);
            if (current.size() > (64u << 10))
                current.resize(64u << 10);
            text.assign(current.begin(), current.end());
        }
        const auto t0 = clk::now();
        auto g = compile_json_schema(text);
        const auto compile_took = clk::now() - t0;
        if (compile_took > case_limit) {
            std::cerr << "fuzz_schema: compile took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(compile_took).count()
                      << " ms (seed " << seed << ", case " << cases << "): " << text.substr(0, 400)
                      << "\n";
            return 1;
        }
        if (!g) {
            if (g.error().message.empty()) {
                std::cerr << "fuzz_schema: an error without a message: " << text.substr(0, 400)
                          << "\n";
                return 1;
            }
            ++refused;
            continue;
        }
        ++compiled;
        write_values(*g, text, rng, out, outputs, dead_ends);
        // Every third schema also through a real tokenizer (alternating), within half the case's
        // bound: a mask per token over a 128k vocabulary costs far more than a byte.
        if (!tokenizers.empty() && compiled % 3 == 1) {
            const auto& [name, tok] = tokenizers[(compiled / 3) % tokenizers.size()];
            if (auto c = schema_cache::shared().get(text, tok)) {
                ++token_walks;
                const auto r = token_walk(*c, rng, 48, t0 + case_limit / 2);
                if (r.complete && !r.text.empty()) {
                    json::object line{{"schema", text}, {"instance", r.text}, {"via", name}};
                    out << json::serialize(line) << "\n";
                    ++outputs;
                    ++token_values;
                }
            }
        }
        if (clk::now() - t0 > case_limit) {
            std::cerr << "fuzz_schema: a case took past its bound (seed " << seed << ", case "
                      << cases << "): " << text.substr(0, 400) << "\n";
            return 1;
        }
        if (max_rss_kib() > rss_limit_kib) {
            std::cerr << "fuzz_schema: peak RSS past 1 GiB at case " << cases << ": "
                      << text.substr(0, 400) << "\n";
            return 1;
        }
    }
    std::cout << "fuzz_schema: " << cases << " schemas in " << seconds << " s (seed " << seed
              << "): " << compiled << " compiled, " << refused << " refused cleanly, " << outputs
              << " values written (" << token_values << " from " << token_walks << " token walks), "
              << dead_ends << " walks ended in a dead end\n";
    return 0;
}
