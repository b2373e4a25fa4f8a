// libFuzzer entry for the HTTP front end (built only with clang and BITNET_LIBFUZZER=ON).
#include "http_fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bitnet::fuzz::check_http_bytes({data, size});
    return 0;
}
