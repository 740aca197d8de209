// The one Catch2 main() for build/host/unit_tests (every tests/host/*.cpp links into it).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
