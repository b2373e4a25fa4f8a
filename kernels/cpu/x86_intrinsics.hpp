// <immintrin.h> for the AVX2 and AVX-512 kernel files (kernels/cpu/*_avx2.cpp, *_avx512.cpp), with
// the one warning workaround they all need kept in one place.
//
// GCC 12's intrinsic headers build some results from a self-initialised "undefined" vector
// (_mm256_undefined_pd and friends), which -Wuninitialized / -Wmaybe-uninitialized report wherever
// they are inlined; with warnings as errors that breaks the build. The suppression covers only the
// intrinsic header itself, not the kernels' own code.
//
// No target pragmas here on purpose: each file's instruction set comes from its compile flags
// (kernels/CMakeLists.txt, by file name), so this one header serves both families. Include it only
// from those files; everything else must stay free of ISA-specific code.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
