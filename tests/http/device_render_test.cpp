// What the operational routes say about devices: /health's "devices" (the placement list and the
// CUDA runtime's report) and each model's device, reason and fallbacks; /v1/models/{alias} the
// same; and the fallback counter's series in /metrics.
#include "http/api_render.hpp"
#include "http/observe/metrics.hpp"
#include "http/routes/server.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
namespace json = boost::json;

namespace {

msg::model_status fell_back_model() {
    msg::model_status m;
    m.alias = "m";
    m.version = "v1";
    m.state = "ready";
    m.info.device = "cpu";
    m.info.device_reason = "fallback from cuda:0: no CUDA device 0";
    m.device_fallbacks = 1;
    return m;
}

} // namespace

TEST_CASE("/health lists the placements, the CUDA report and each model's device") {
    http::status_snapshot snap;
    snap.ready = true;
    snap.models = {fell_back_model()};
    msg::model_status loading;
    loading.alias = "l";
    loading.state = "loading";
    snap.models.push_back(loading);
    http::build_info b;
    b.devices.placements = {"cuda:0", "cpu"};
    b.devices.cuda_error = "no CUDA-capable device is detected";
    b.devices.cuda_devices.push_back({1, "Some GPU", 90, 80ull << 30});
    const auto h = json::parse(http::health_body(snap, b, true, 5)).as_object();
    const auto& d = h.at("devices").as_object();
    CHECK(d.at("placements").as_array() == json::array{"cuda:0", "cpu"});
    const auto& cuda = d.at("cuda").as_object();
    CHECK(cuda.at("built") == false);
    CHECK(cuda.at("error").as_string() == "no CUDA-capable device is detected");
    REQUIRE(cuda.at("devices").as_array().size() == 1);
    CHECK(cuda.at("devices").as_array()[0].as_object().at("index") == 1);
    CHECK(cuda.at("devices").as_array()[0].as_object().at("name") == "Some GPU");
    const auto& models = h.at("components").as_object().at("models").as_array();
    REQUIRE(models.size() == 2);
    const auto& m = models[0].as_object();
    CHECK(m.at("device") == "cpu");
    CHECK(m.at("device_reason") == "fallback from cuda:0: no CUDA device 0");
    CHECK(m.at("device_fallbacks") == 1);
    // A version whose executor has not answered yet has no device to show.
    CHECK(models[1].as_object().at("device").is_null());
    CHECK(models[1].as_object().at("device_fallbacks") == 0);
}

TEST_CASE("/health's CUDA error is null when the runtime reported none") {
    http::status_snapshot snap;
    http::build_info b;
    b.devices.cuda_built = true;
    const auto h = json::parse(http::health_body(snap, b, true, 5)).as_object();
    CHECK(h.at("devices").as_object().at("cuda").as_object().at("error").is_null());
    CHECK(h.at("devices").as_object().at("cuda").as_object().at("built") == true);
}

TEST_CASE("/v1/models/{alias} shows the device, why, and the fallbacks") {
    const auto o = json::parse(http::model_detail_body(fell_back_model(), {})).as_object();
    CHECK(o.at("device") == "cpu");
    CHECK(o.at("device_reason") == "fallback from cuda:0: no CUDA device 0");
    CHECK(o.at("device_fallbacks") == 1);
}

TEST_CASE("bitnet_device_fallbacks_total counts per alias, from, to and reason") {
    http::metrics m;
    CHECK(m.render().find("bitnet_device_fallbacks_total{") == std::string::npos);
    m.device_fallback("m", "cuda:0", "cpu", "no_device");
    m.device_fallback("m", "cuda:0", "cpu", "no_device");
    m.device_fallback("m", "cuda:1", "cuda:0", "out_of_memory");
    const auto text = m.render();
    CHECK(text.find("# TYPE bitnet_device_fallbacks_total counter") != std::string::npos);
    CHECK(
        text.find(
            R"(bitnet_device_fallbacks_total{alias="m",from="cuda:0",reason="no_device",to="cpu"} 2)") !=
        std::string::npos);
    CHECK(
        text.find(
            R"(bitnet_device_fallbacks_total{alias="m",from="cuda:1",reason="out_of_memory",to="cuda:0"} 1)") !=
        std::string::npos);
}
