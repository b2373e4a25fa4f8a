// The device side of any build on a machine without a usable GPU (every CI machine and this one):
// enumeration answers, never aborts, and says why there is nothing; opening a device that is not
// there throws device_error with a reason an operator can act on, instead of crashing.
#include "kernels/cuda/ops.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet::kernels::cuda;

TEST_CASE("cuda enumerate_devices answers and says why when there is no device") {
    const device_report r = enumerate_devices();
    MESSAGE("built=" << r.built << " runtime=" << r.runtime_version
                     << " driver=" << r.driver_version << " devices=" << r.devices.size()
                     << " error=" << r.error);
#ifdef BITNET_WITH_CUDA
    CHECK(r.built);
    CHECK(r.runtime_version > 0);
#else
    CHECK_FALSE(r.built);
#endif
    if (r.devices.empty())
        CHECK_FALSE(r.error.empty());
    for (const device_info& d : r.devices) {
        CHECK_FALSE(d.name.empty());
        CHECK(d.sm >= 10);
        CHECK(d.total_bytes > 0);
    }
}

TEST_CASE("cuda make_device_ops on a device that is not there throws device_error") {
    // The first index the runtime does not list: 0 on a machine without a GPU.
    const int index = static_cast<int>(enumerate_devices().devices.size());
    try {
        auto o = make_device_ops(index);
        FAIL("make_device_ops(" << index << ") returned a device");
    } catch (const device_error& e) {
        MESSAGE("cuda:" << index << ": " << std::string(failure_name(e.kind())) << ": "
                        << std::string(e.what()));
        CHECK_FALSE(std::string(e.what()).empty());
#ifdef BITNET_WITH_CUDA
        const bool expected =
            e.kind() == device_failure::no_driver || e.kind() == device_failure::no_device;
#else
        const bool expected = e.kind() == device_failure::not_built;
#endif
        CHECK(expected);
    }
}
