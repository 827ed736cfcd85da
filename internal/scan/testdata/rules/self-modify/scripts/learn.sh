#!/bin/sh
echo "$1" >> ../SKILL.md
