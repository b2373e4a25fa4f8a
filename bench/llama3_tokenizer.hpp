// The real Llama-3 tokenizer from tests/data/tokenizer, loaded once, for the benchmarks that
// measure on a 128,256-token vocabulary. A bench that cannot load it says why and exits 1.
// Needs BITNET_BENCH_DATA_DIR (bench/CMakeLists.txt: the tests' data folder).
#pragma once

#include "model/tokenizer/tokenizer.hpp"
#include "tools/hf_tokenizer_import.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace bitnet::bench {

inline const model::tokenizer& llama3_tokenizer() {
    static const model::tokenizer tok = [] {
        const std::string dir = std::string(BITNET_BENCH_DATA_DIR) + "/tokenizer/";
        auto v = tools::import_hf_tokenizer_file(dir + "llama3-tokenizer.json",
                                                 dir + "llama3-tokenizer_config.json");
        if (!v) {
            std::fprintf(stderr, "%s\n", v.error().to_string().c_str());
            std::exit(1);
        }
        auto t = model::tokenizer::create(std::move(*v));
        if (!t) {
            std::fprintf(stderr, "%s\n", t.error().to_string().c_str());
            std::exit(1);
        }
        return std::move(*t);
    }();
    return tok;
}

} // namespace bitnet::bench
