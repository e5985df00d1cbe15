from perflab.cli import console

console()
