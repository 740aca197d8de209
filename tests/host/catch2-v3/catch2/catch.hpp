// Catch2 v3 under Catch2 v2's name. kai's host tests are written for v2's
// single header <catch2/catch.hpp> (Debian 12's catch2 package). Debian 13 and
// Ubuntu 24.04 ship Catch2 v3, which split that header into many and moved
// the rest into a library (libCatch2.a); the Makefile puts this directory on
// the include path and links the library when the system has v3 only.
// What the tests use and v3 renamed is brought back here.
#pragma once
#include <catch2/catch_all.hpp>

using Catch::Approx;
