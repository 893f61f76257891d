import sys

from fastsoftmax.cli import main

sys.exit(main())
