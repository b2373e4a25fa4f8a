// bitnet-cli tokenize/detokenize/generate through the command-line contract that scripts outside
// the test suite rely on (issue: "Command-line contract").
#include "model/engine/engine.hpp"
#include "support/run_process.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace bitnet;
namespace json = boost::json;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

std::vector<std::int64_t> ids_of(const json::value& v) {
    std::vector<std::int64_t> ids;
    for (const json::value& id : v.as_array())
        ids.push_back(id.as_int64());
    return ids;
}

} // namespace

TEST_CASE("a model made with --tokenizer tokenizes and detokenizes the Llama-3 reference exactly") {
    test::scratch_dir dir;
    const std::string model = dir.file("llama3-tiny.gguf");
    auto made =
        test::run_tool("bitnet-model", "make --shape tiny --tokenizer " +
                                           test::data_path("tokenizer/llama3-tokenizer.json") +
                                           " --seed 1 -o " + model);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    auto verified = test::run_tool("bitnet-cli", "verify " + model);
    CHECK_MESSAGE(verified.exit_code == 0, verified.err);

    std::ifstream ref_file(test::data_path("tokenizer/llama3-reference.jsonl"));
    std::vector<json::object> refs;
    std::string texts, id_lines;
    for (std::string line; std::getline(ref_file, line);) {
        refs.push_back(json::parse(line).as_object());
        texts += json::serialize(json::object{{"text", refs.back().at("text")}}) + "\n";
        id_lines += json::serialize(json::object{{"ids", refs.back().at("ids")}}) + "\n";
    }
    REQUIRE(refs.size() == 276);

    auto tok = test::run_tool("bitnet-cli", "tokenize -m " + model + " --jsonl", texts);
    REQUIRE_MESSAGE(tok.exit_code == 0, tok.err);
    const auto tok_lines = lines_of(tok.out);
    REQUIRE(tok_lines.size() == refs.size());
    int exact = 0;
    for (std::size_t i = 0; i < refs.size(); ++i)
        exact += ids_of(json::parse(tok_lines[i]).at("ids")) == ids_of(refs[i].at("ids"));
    CHECK(exact == 276);

    auto detok = test::run_tool("bitnet-cli", "detokenize -m " + model + " --jsonl", id_lines);
    REQUIRE_MESSAGE(detok.exit_code == 0, detok.err);
    const auto detok_lines = lines_of(detok.out);
    REQUIRE(detok_lines.size() == refs.size());
    for (std::size_t i = 0; i < refs.size(); ++i)
        if (refs[i].at("roundtrip").as_bool())
            CHECK(json::parse(detok_lines[i]).at("text") == refs[i].at("text"));

    // --bos puts <|begin_of_text|> first.
    auto bos = test::run_tool("bitnet-cli", "tokenize -m " + model + " --jsonl --bos",
                              "{\"text\":\"Hi\"}\n");
    REQUIRE(bos.exit_code == 0);
    CHECK(ids_of(json::parse(bos.out).at("ids")).front() == 128000);
}

TEST_CASE("tokenize/detokenize answer a bad line with an error line in its place, exit 1") {
    test::scratch_dir dir;
    const std::string model = dir.file("tiny.gguf");
    REQUIRE(test::run_tool("bitnet-model", "make --shape tiny --seed 1 -o " + model).exit_code ==
            0);
    auto tok = test::run_tool("bitnet-cli", "tokenize -m " + model + " --jsonl",
                              "{\"text\":\"a\"}\nnot json\n{\"txt\":1}\n{\"text\":\"b\"}\n");
    CHECK(tok.exit_code == 1);
    const auto out = lines_of(tok.out);
    REQUIRE(out.size() == 4);
    CHECK(ids_of(json::parse(out[0]).at("ids")) == std::vector<std::int64_t>{97});
    CHECK(json::parse(out[1]).as_object().contains("error"));
    CHECK(json::parse(out[2]).as_object().contains("error"));
    CHECK(ids_of(json::parse(out[3]).at("ids")) == std::vector<std::int64_t>{98});

    auto detok = test::run_tool("bitnet-cli", "detokenize -m " + model + " --jsonl",
                                "{\"ids\":[104,105]}\n{\"ids\":[100000]}\n{\"ids\":\"x\"}\n");
    CHECK(detok.exit_code == 1);
    const auto dl = lines_of(detok.out);
    REQUIRE(dl.size() == 3);
    CHECK(json::parse(dl[0]).at("text") == "hi");
    CHECK(json::parse(dl[1]).as_object().contains("error"));
    CHECK(json::parse(dl[2]).as_object().contains("error"));

    auto missing =
        test::run_tool("bitnet-cli", "tokenize -m " + dir.file("nope.gguf") + " --jsonl");
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("nope.gguf") != std::string::npos);
}

TEST_CASE("generate --prompt-ids --json prints the engine's greedy ids, text and speeds") {
    test::scratch_dir dir;
    const std::string model = dir.file("tiny.gguf");
    REQUIRE(test::run_tool("bitnet-model", "make --shape tiny --seed 9 -o " + model).exit_code ==
            0);
    const std::string args =
        "generate -m " + model + " --prompt-ids 5,6,7,300 -n 12 --ignore-eos --json --threads 2";
    auto a = test::run_tool("bitnet-cli", args);
    REQUIRE_MESSAGE(a.exit_code == 0, a.err);
    const json::object o = json::parse(a.out).as_object();
    const auto ids = ids_of(o.at("ids"));
    CHECK(ids.size() == 12);
    CHECK(o.at("text").is_string());
    CHECK(o.at("prompt_tokens_per_s").as_double() > 0.0);
    CHECK(o.at("gen_tokens_per_s").as_double() > 0.0);

    // The same ids as the engine's own greedy loop, in process.
    model::engine_options opt;
    opt.model_path = model;
    auto eng = model::engine::load(opt).value();
    model::seq_chunk c{1, {5, 6, 7, 300}, 0, true};
    std::vector<std::int64_t> want;
    for (int i = 0; i < 12; ++i) {
        auto out = eng->step(std::span<const model::seq_chunk>(&c, 1)).value();
        const auto row = out.row(0, eng->config().n_vocab);
        const auto tok =
            static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
        want.push_back(tok);
        c.pos0 += static_cast<std::uint32_t>(c.tokens.size());
        c.tokens = {tok};
    }
    CHECK(ids == want);

    // Plain mode streams the text and reports speeds on stderr.
    auto plain = test::run_tool("bitnet-cli", "generate -m " + model + " -p hello -n 4");
    CHECK(plain.exit_code == 0);
    CHECK(plain.err.find("tokens/s") != std::string::npos);

    CHECK(test::run_tool("bitnet-cli", "generate -m " + model + " --prompt-ids 1,x").exit_code ==
          2);
    auto oor = test::run_tool("bitnet-cli", "generate -m " + model + " --prompt-ids 1,99999");
    CHECK(oor.exit_code == 1);
    CHECK(oor.err.find("99999") != std::string::npos);
}
