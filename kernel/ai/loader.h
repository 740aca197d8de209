// The boot-time model loader thread (loader.cpp).
#pragma once

namespace ai {

void start_loader();   // starts the kernel thread ai-loader: it lists /AI and loads every bundle

}  // namespace ai
