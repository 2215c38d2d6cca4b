#include "confine/system.h"

#include <stddef.h>

const char *const sb_system_rx[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", NULL};

const char *const sb_system_ro[] = {"/etc/ld.so.cache",
                                    "/etc/ld.so.conf",
                                    "/etc/ld.so.conf.d",
                                    "/etc/nsswitch.conf",
                                    "/etc/passwd",
                                    "/etc/group",
                                    "/etc/hosts",
                                    "/etc/host.conf",
                                    "/etc/resolv.conf",
                                    "/etc/gai.conf",
                                    "/etc/localtime",
                                    "/etc/timezone",
                                    "/etc/ssl/certs",
                                    "/etc/ssl/openssl.cnf",
                                    "/etc/ca-certificates",
                                    "/etc/ca-certificates.conf",
                                    "/etc/mime.types",
                                    "/etc/protocols",
                                    "/etc/services",
                                    "/etc/os-release",
                                    "/etc/debian_version",
                                    "/etc/lsb-release",
                                    "/etc/locale.alias",
                                    "/etc/inputrc",
                                    "/etc/terminfo",
                                    "/etc/magic",
                                    "/etc/python3",
                                    "/etc/alternatives",
                                    "/etc/bash.bashrc",
                                    "/etc/profile",
                                    "/etc/shells",
                                    "/etc/mailcap",
                                    "/etc/xdg",
                                    "/etc/mke2fs.conf",
                                    "/etc/gitconfig",
                                    NULL};

const char *const sb_system_dev[] = {"/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                                     "/dev/urandom", "/dev/tty",  NULL};
