// Lets doctest print bitnet::result<T> in failed assertions ("ok" or the error text). Force-
// included into every test translation unit by tests/CMakeLists.txt.
#pragma once

#include "common/error.hpp"

#include <doctest/doctest.h>

namespace doctest {
template <class T>
struct StringMaker<boost::system::result<T, bitnet::error>> {
    static String convert(const boost::system::result<T, bitnet::error>& r) {
        return r ? String("ok") : String(r.error().to_string().c_str());
    }
};
} // namespace doctest
