// aotgrad: the IR's error type is the support layer's (aotgrad/support/error.h): Error with the
// graph text position it occurred at, and AOTGRAD_CHECK.
#pragma once

#include "aotgrad/support/error.h"
