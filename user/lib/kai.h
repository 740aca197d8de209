// Everything a kai user program needs: system calls, stdio, strings, stdlib.
#pragma once
#include <initializer_list>   // range-for over {a, b, c}
#include "kai_sys.h"
#include "kai_string.h"
#include "kai_stdio.h"
#include "kai_stdlib.h"
