// In-tree mutation fuzzer for the HTTP front end (no clang needed): mutates real requests of
// every route (and the framing cases hostile clients send: chunked bodies with trailers, CL+TE,
// pipelining, HTTP/1.0, an HTTP/2 preface) with the byte mutator and a dictionary of protocol
// tokens, for a bounded time, through the property of http_fuzz_target.hpp.
// Usage: fuzz_http SECONDS SEED; prints the executions it ran; exits non-zero only by crashing.
#include "byte_mutator.hpp"
#include "http_fuzz_target.hpp"
#include "http_seeds.hpp"

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

using namespace bitnet;

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::stod(argv[1]) : 10.0;
    const std::uint64_t seed = argc > 2 ? std::stoull(argv[2]) : 1;
    std::vector<std::vector<std::uint8_t>> pool;
    for (const auto& s : fuzz::http_seed_requests())
        pool.emplace_back(s.begin(), s.end());
    for (const auto& s : pool)
        fuzz::check_http_bytes(s);

    fuzz::byte_mutator m(seed, fuzz::http_dictionary());
    const auto runs = fuzz::run_mutations(seconds, m, pool, 256 * 1024,
                                          [](const auto& bytes) { fuzz::check_http_bytes(bytes); });
    std::cout << "fuzz_http: " << runs << " inputs in " << seconds << " s (seed " << seed
              << "), no crash\n";
    return 0;
}
