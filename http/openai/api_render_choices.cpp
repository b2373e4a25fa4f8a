// Plain replies with several choices (see api_render_choices.hpp).
#include "http/openai/api_render_choices.hpp"

#include "http/api_render.hpp"

namespace bitnet::http {

std::string chat_choices_body(const std::string& req_id, std::int64_t created,
                              const msg::completion& total,
                              std::span<const rendered_choice> choices) {
    std::string list;
    for (std::size_t i = 0; i < choices.size(); ++i)
        list += (i ? "," : "") + std::string(R"({"index":)") + std::to_string(i) +
                R"(,"message":{"role":"assistant","content":)" + quoted(choices[i].text) +
                R"(,"refusal":null},"logprobs":)" + choices[i].logprobs + R"(,"finish_reason":)" +
                quoted(openai_finish(choices[i].finish)) + "}";
    return R"({"id":"chatcmpl-)" + req_id.substr(4) + R"(","object":"chat.completion","created":)" +
           std::to_string(created) + R"(,"model":)" + quoted(total.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[)" + list + R"(],"usage":)" +
           usage_json(total) + "}";
}

std::string completion_choices_body(const std::string& req_id, std::int64_t created,
                                    const msg::completion& total,
                                    std::span<const rendered_choice> choices) {
    std::string list;
    for (std::size_t i = 0; i < choices.size(); ++i)
        list += (i ? "," : "") + std::string(R"({"text":)") + quoted(choices[i].text) +
                R"(,"index":)" + std::to_string(i) + R"(,"logprobs":)" + choices[i].logprobs +
                R"(,"finish_reason":)" + quoted(openai_finish(choices[i].finish)) + "}";
    return R"({"id":"cmpl-)" + req_id.substr(4) + R"(","object":"text_completion","created":)" +
           std::to_string(created) + R"(,"model":)" + quoted(total.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[)" + list + R"(],"usage":)" +
           usage_json(total) + "}";
}

} // namespace bitnet::http
