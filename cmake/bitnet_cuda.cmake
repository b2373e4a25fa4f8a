# Optional CUDA: BITNET_CUDA=AUTO builds the .cu kernels when nvcc exists; nothing CUDA is needed
# to build or test. No GPU is present at build time, so the architectures are set explicitly.
# Sets BITNET_HAVE_CUDA; with it, CUDA::cudart_static exists (the runtime linked statically, so
# binaries start on machines without libcudart and report "no driver" there instead of failing to
# load).
set(BITNET_HAVE_CUDA OFF)
if(NOT BITNET_CUDA STREQUAL "OFF")
    # CI runners often install the toolkit under its usual prefix without adding its bin/ to PATH;
    # check_language() only searches PATH, so point it there when nothing else names a compiler.
    if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
       AND EXISTS /usr/local/cuda/bin/nvcc)
        set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "the CUDA compiler")
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            set(CMAKE_CUDA_ARCHITECTURES 80 90)
        endif()
        # Objects shared across build trees as the C++ ones are (nvcc is the slow compiler here).
        if(NOT DEFINED CMAKE_CUDA_COMPILER_LAUNCHER)
            find_program(BITNET_CCACHE ccache)
            if(BITNET_CCACHE)
                set(CMAKE_CUDA_COMPILER_LAUNCHER ${BITNET_CCACHE})
            endif()
        endif()
        enable_language(CUDA)
        # The .cu files need C++20 (kernels/f16.hpp's constexpr helpers use std::bit_cast, and
        # CUDA targets inherit CMAKE_CXX_STANDARD anyway), which nvcc 12+ accepts, but CMake 3.25
        # knows no CUDA20 flag for nvcc: teach it the flag rather than pass a second -std.
        if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
            set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
            set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
        endif()
        set(CMAKE_CUDA_STANDARD 20)
        set(CMAKE_CUDA_STANDARD_REQUIRED ON)
        find_package(CUDAToolkit)
        if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
            set(BITNET_HAVE_CUDA ON)
        elseif(BITNET_CUDA STREQUAL "ON")
            message(FATAL_ERROR "BITNET_CUDA=ON but the CUDA toolkit's static runtime was not found")
        endif()
    elseif(BITNET_CUDA STREQUAL "ON")
        message(FATAL_ERROR "BITNET_CUDA=ON but no CUDA compiler was found")
    endif()
endif()
message(STATUS "bitnet: CUDA kernels ${BITNET_HAVE_CUDA}")
