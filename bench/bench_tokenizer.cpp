// Encode/decode throughput of the Llama-3 tokenizer (byte-level BPE, llama-bpe pre-tokenizer) on
// the 276 reference texts of tests/data/tokenizer concatenated (English, code, JSON, many scripts),
// repeated to about 1 MiB. Figures go to bench/RESULTS.md.
#include "llama3_tokenizer.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

std::string data_dir() {
    return std::string(BITNET_BENCH_DATA_DIR) + "/tokenizer/";
}

const bitnet::model::tokenizer& llama3() {
    return bitnet::bench::llama3_tokenizer();
}

const std::string& corpus() {
    static const std::string text = [] {
        std::ifstream in(data_dir() + "llama3-reference.jsonl");
        std::string one, line;
        while (std::getline(in, line))
            one += std::string(boost::json::parse(line).at("text").as_string()) + "\n";
        std::string all;
        while (all.size() < (1u << 20))
            all += one;
        return all;
    }();
    return text;
}

void bm_encode(benchmark::State& state) {
    const auto& tok = llama3();
    const auto& text = corpus();
    std::vector<std::int32_t> ids;
    for (auto _ : state) {
        ids.clear();
        if (!tok.encode_into(text, {}, ids))
            state.SkipWithError("encode failed");
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
    state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(bm_encode)->Unit(benchmark::kMillisecond);

void bm_decode(benchmark::State& state) {
    const auto& tok = llama3();
    const auto ids = tok.encode(corpus()).value();
    for (auto _ : state) {
        std::string s = tok.decode(ids);
        benchmark::DoNotOptimize(s.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
}
BENCHMARK(bm_decode)->Unit(benchmark::kMillisecond);

// Start-up cost: parse the 9 MB tokenizer.json, convert, build the tables.
void bm_load(benchmark::State& state) {
    for (auto _ : state) {
        auto v = bitnet::tools::import_hf_tokenizer_file(data_dir() + "llama3-tokenizer.json");
        auto t = bitnet::model::tokenizer::create(std::move(v.value()));
        benchmark::DoNotOptimize(t.value().n_vocab());
    }
}
BENCHMARK(bm_load)->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace

BENCHMARK_MAIN();
