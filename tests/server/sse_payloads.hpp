// The SSE `data:` payloads of a response body, in order (the OpenAI routes' stream format).
#pragma once

#include <string>
#include <vector>

namespace bitnet::test {

inline std::vector<std::string> sse_data(const std::string& body) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const auto end = body.find("\n\n", at);
        out.push_back(body.substr(at + 6, end - at - 6));
        at = end;
    }
    return out;
}

} // namespace bitnet::test
