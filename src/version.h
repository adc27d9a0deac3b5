/* SPDX-License-Identifier: MIT */
#ifndef LATHIST_VERSION_H
#define LATHIST_VERSION_H
#define LATHIST_VERSION "0.1.0"
#endif
