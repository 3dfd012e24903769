#pragma once
#include <vector>

#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune {
OpInfo rmsnorm_op_info();
} // namespace ktune
