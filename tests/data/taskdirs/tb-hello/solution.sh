#!/bin/bash
echo "Hello, world!" > /app/greeting.txt
mkdir -p /app/notes
