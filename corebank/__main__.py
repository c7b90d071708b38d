from corebank.cli import main

main()
