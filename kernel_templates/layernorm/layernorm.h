#pragma once
#include <vector>

#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune {
OpInfo layernorm_op_info();
} // namespace ktune
