// Seeds of the HTTP fuzzers: a real request of every route, the framing cases hostile clients
// send (chunked bodies with extensions and trailers, CL+TE, pipelining, HTTP/1.0, an HTTP/2
// preface), and a dictionary of protocol tokens. Shared by the in-process fuzzer and the
// raw-socket mutation test against the real binary.
#pragma once

#include <string>
#include <vector>

namespace bitnet::fuzz {

inline std::string http_post(const std::string& target, const std::string& body,
                             const std::string& extra = {}) {
    return "POST " + target + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// Real requests of every route, and the framing cases hostile clients send.
inline std::vector<std::string> http_seed_requests() {
    const std::string native = R"({"prompt":"Hello","max_tokens":16,"temperature":0.7,)"
                               R"("top_k":40,"top_p":0.9,"seed":1,"stop":["\n"],)"
                               R"("stop_token_ids":[2],"priority":"high","timeout_ms":500})";
    return {
        "GET /health/live HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /health/ready HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /health HTTP/1.0\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: h\r\nAccept: text/plain\r\n\r\n",
        "GET /v1/stats HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer k\r\n\r\n",
        "GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /v1/models/tiny?x=1 HTTP/1.1\r\nHost: h\r\n\r\n",
        "DELETE /v1/models/tiny HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer admin\r\n\r\n",
        "POST /v1/models/tiny/rollback HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
        "POST /v1/models/tiny/crash HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
        http_post("/v1/models/load",
                  R"({"alias":"a","path":"/m/a.gguf","version":"v1","warmup":true})"),
        http_post("/v1/inference", native),
        http_post("/v1/inference/stream", R"({"prompt":[1,2,3],"max_tokens":4})"),
        http_post("/v1/completions",
                  R"({"model":"tiny","prompt":"Once","max_tokens":8,"logprobs":2,"stream":true,)"
                  R"("stream_options":{"include_usage":true},"echo":false,"n":1})"),
        http_post("/v1/chat/completions",
                  R"({"messages":[{"role":"system","content":"Be brief."},)"
                  R"({"role":"user","content":"Hi \u00e9\ud83d\ude00"}],"max_completion_tokens":8,)"
                  R"("logprobs":true,"top_logprobs":2,"min_p":0.05,"repetition_penalty":1.1})"),
        // A tool loop's second turn, as the SDKs send it, on both APIs.
        http_post("/v1/chat/completions",
                  R"({"messages":[{"role":"developer","content":[{"type":"text","text":"T"}]},)"
                  R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":)"
                  R"("function","function":{"name":"f","arguments":"{\"a\":1}"}}]},)"
                  R"({"role":"tool","tool_call_id":"c1","content":"ok"}],"max_tokens":4,)"
                  R"("tools":[{"type":"function","function":{"name":"f","parameters":)"
                  R"({"type":"object"}}}],"tool_choice":{"type":"function","function":)"
                  R"({"name":"f"}}})"),
        http_post("/v1/messages",
                  R"({"max_tokens":4,"system":[{"type":"text","text":"S"}],"messages":[)"
                  R"({"role":"user","content":"q"},{"role":"assistant","content":[{"type":)"
                  R"("tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user",)"
                  R"("content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}],)"
                  R"("tools":[{"name":"f","input_schema":{"type":"object"}}],)"
                  R"("tool_choice":{"type":"any"},"stop_sequences":["x"]})"),
        http_post("/v1/responses",
                  R"({"instructions":"I","input":[{"role":"user","content":[{"type":"input_text",)"
                  R"("text":"q"}]},{"type":"function_call","call_id":"c","name":"f","arguments":)"
                  R"("{}"},{"type":"function_call_output","call_id":"c","output":"r"}],)"
                  R"("max_output_tokens":4,"tools":[{"type":"function","name":"f"}],)"
                  R"("tool_choice":"required","text":{"format":{"type":"json_object"}}})"),
        http_post("/v1/responses",
                  R"({"previous_response_id":"resp_f","input":[{"type":"item_reference","id":)"
                  R"("fc_f"},{"type":"function_call_output","call_id":"c","output":"r"}],)"
                  R"("store":false,"parallel_tool_calls":false,"max_output_tokens":2})"),
        http_post("/v1/tokenize", R"({"text":"Hello","add_bos":true,"parse_special":false})"),
        http_post("/v1/detokenize", R"({"tokens":[72,101,108],"model":"tiny"})"),
        // Chunked with extensions and trailers; CL and TE together; pipelined; HTTP/2 preface.
        "POST /v1/tokenize HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5;ext=1\r\n{\"tex\r\n8\r\nt\":\"ab\"}\r\n0\r\nX-Trailer: v\r\n\r\n",
        "POST /v1/tokenize HTTP/1.1\r\nHost: h\r\nContent-Length: 13\r\n"
        "Transfer-Encoding: chunked\r\n\r\nd\r\n{\"text\":\"ab\"}\r\n0\r\n\r\n",
        "GET /health/live HTTP/1.1\r\nHost: h\r\n\r\nGET /metrics HTTP/1.1\r\nHost: h\r\n\r\n" +
            http_post("/v1/tokenize", R"({"text":"x"})"),
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    };
}

/// Protocol tokens for the mutator: framing words, limits' edges, JSON shapes.
inline std::vector<std::string> http_dictionary() {
    return {
        "\r\n",
        "\r\n\r\n",
        ": ",
        "Transfer-Encoding: chunked\r\n",
        "Content-Length: ",
        "Content-Length: 18446744073709551616\r\n",
        "Connection: close\r\n",
        "Connection: keep-alive\r\n",
        "Expect: 100-continue\r\n",
        "0\r\n\r\n",
        "ffffffffffffffff\r\n",
        ";ext=\"q\"",
        "HTTP/1.0",
        "HTTP/1.1",
        "GET ",
        "POST ",
        "/v1/models/",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/responses",
        R"({"type":"function_call_output","call_id":"c","output":)",
        R"({"type":"item_reference","id":"fc_f"})",
        R"("previous_response_id":"resp_f",)",
        R"("parallel_tool_calls":false,)",
        R"("tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}])",
        R"({"type":"tool_result","tool_use_id":"t","content":)",
        "{alias}",
        "%00",
        std::string(1, '\0'),
        "\x7f",
        "\xff\xfe",
        "\\u0000",
        "\\ud800",
        "1e999",
        "-1",
        "null",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        R"("prompt":[)",
        R"("max_tokens":)",
        R"("messages":[{"role":"user","content":)",
        R"("stream":true,)",
        std::string(1100, 'A')};
}

} // namespace bitnet::fuzz
