// Catch2's main, compiled once for the unit and integration test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
