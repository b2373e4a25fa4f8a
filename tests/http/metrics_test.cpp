// /metrics carries every name of the contract, including the vLLM aliases.
#include "http/observe/metrics.hpp"

#include <doctest/doctest.h>

TEST_CASE("the exposition has the contract's metric names") {
    bitnet::http::metrics m;
    m.request_done("/v1/inference", 200, 0.1);
    bitnet::msg::completion c;
    c.prompt_tokens = 3;
    c.completion_tokens = 2;
    m.completion(c);
    m.inter_token(0.01);
    m.rejected("queue_full");
    bitnet::msg::batcher_stats s;
    s.running = 2;
    s.waiting = {1, 2, 3};
    s.kv_blocks_used = 1;
    s.kv_blocks_total = 4;
    m.queues({s});
    m.model_info({{"tiny", "1", "i2_s", "cpu"}});
    m.build_info("0.1.0", "abc123");
    const auto text = m.render();
    for (const char* name : {"bitnet_requests_total{",
                             "bitnet_request_duration_seconds_bucket",
                             "bitnet_time_to_first_token_seconds_bucket",
                             "bitnet_inter_token_latency_seconds_bucket",
                             "bitnet_queue_time_seconds_bucket",
                             "bitnet_prompt_tokens_total 3",
                             "bitnet_generated_tokens_total 2",
                             "bitnet_requests_running 2",
                             "bitnet_requests_waiting{priority=\"low\"} 3",
                             "bitnet_batch_size",
                             "bitnet_step_duration_seconds",
                             "bitnet_kv_cache_usage_ratio 0.25",
                             "bitnet_admission_rejections_total{reason=\"queue_full\"} 1",
                             "bitnet_model_info{",
                             "bitnet_model_swaps_total",
                             "bitnet_build_info{",
                             "vllm:num_requests_running 2",
                             "vllm:num_requests_waiting 6",
                             "vllm:kv_cache_usage_perc 0.25",
                             "vllm:time_to_first_token_seconds_bucket",
                             "vllm:e2e_request_latency_seconds_bucket"})
        CHECK_MESSAGE(text.find(name) != std::string::npos, std::string(name));
}

TEST_CASE("a fresh registry already exposes the labelled series that alerts select") {
    bitnet::http::metrics m;
    const auto text = m.render();
    for (const char* series : {"bitnet_admission_rejections_total{reason=\"queue_full\"} 0",
                               "bitnet_admission_rejections_total{reason=\"draining\"} 0",
                               "bitnet_model_swaps_total{result=\"rollback\"} 0",
                               "bitnet_model_swaps_total{result=\"failed\"} 0",
                               "bitnet_requests_waiting{priority=\"high\"} 0"})
        CHECK_MESSAGE(text.find(series) != std::string::npos, std::string(series));
    CHECK(text.find("bitnet_build_info{") == std::string::npos);
    m.build_info("0.1.0", "abc123");
    CHECK(m.render().find(R"(bitnet_build_info{git_sha="abc123",version="0.1.0"} 1)") !=
          std::string::npos);
}

TEST_CASE("bitnet_model_info follows the served versions, swaps count by result") {
    bitnet::http::metrics m;
    m.model_info({{"tiny", "aaa", "i2_s", "cpu"}, {"other", "1", "f32", "cpu"}});
    m.model_info({{"tiny", "bbb", "i2_s", "cpu"}, {"other", "1", "f32", "cpu"}});
    m.swap("success");
    m.swap("failed");
    m.swap("failed");
    const auto text = m.render();
    CHECK(text.find(
              R"(bitnet_model_info{alias="tiny",device="cpu",format="i2_s",version="bbb"} 1)") !=
          std::string::npos);
    CHECK(text.find(R"(version="aaa")") == std::string::npos);
    CHECK(
        text.find(R"(bitnet_model_info{alias="other",device="cpu",format="f32",version="1"} 1)") !=
        std::string::npos);
    CHECK(text.find(R"(bitnet_model_swaps_total{result="success"} 1)") != std::string::npos);
    CHECK(text.find(R"(bitnet_model_swaps_total{result="failed"} 2)") != std::string::npos);
    CHECK(text.find(R"(bitnet_model_swaps_total{result="rollback"} 0)") != std::string::npos);
}
