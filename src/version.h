/* SPDX-License-Identifier: MIT */
#ifndef LATHIST_VERSION_H
#define LATHIST_VERSION_H
#define LATHIST_VERSION "0.3.0"
#endif
