#!/bin/bash
set -e
cd /app
patch -p1 < /solution/fix.patch
