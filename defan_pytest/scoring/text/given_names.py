"""Given names and their forms (SCORING.md clarification 9), a data module: a common short form
of a given name is the same first name (``Jim`` = ``James``), and so is the same name in
another language (``Maria`` = ``Marie``, ``Wilhelm`` = ``William``).  No library the scorer
depends on lists them: a small hand table, read by :mod:`defan_pytest.scoring.text.names`.
"""
from __future__ import annotations

__all__ = ["GIVEN_NAMES"]

#: One line per name: its forms; a short form on several lines ("Al", "Ted") is each of those
#: names, but two different full names never meet through it.
GIVEN_NAMES = """
alexander aleksandr alexandr aleksander alexandre alessandro alejandro alexandros alex sasha sandy
mary maria marie mariya marija
john jon johann johannes jan jean juan giovanni joao jack johnny hans
james jim jimmy jamie jacques giacomo jaime
william wilhelm guillaume guillermo willem bill billy will willy willie
robert roberto bob bobby rob robbie bert
richard ricardo riccardo dick rick ricky rich
thomas tomas tommaso tom tommy
michael michel mikhail michele miguel mihail mike mick mickey
david dave davy davide
daniel dan danny daniele
joseph josef jozef giuseppe jose joe joey
edward eduard edouard eduardo edoardo ed eddie ted teddy ned
theodore theodor teodoro ted teddy theo
albert alberto al bert
alfred alfredo al alf fred
alan allan allen al
samuel sam sammy
benjamin ben benny
christopher chris kit
anthony antony antoine antonio anton tony
stephen steven stefan stephane etienne esteban stefano steve stevie
andrew andre andreas andrei andrey andres andrea andy drew
frederick frederic fredric friedrich federico fred freddie freddy fritz
henry henri heinrich enrique enrico henrik harry hank hal
harold harry hal
lawrence laurence lorenzo laurent larry
elizabeth elisabeth elisabetta liz lizzie beth betty bess
katherine catherine kathryn katharine catharine caterina ekaterina yekaterina kate katie kathy cathy
margaret margarethe marguerite margarita margherita meg peggy maggie
susan suzanne susanna sue susie
barbara barbra babs
jennifer jenny jen
patrick patricio pat paddy
patricia pat patty trish
nicholas nicolas nikolai nikolay niccolo nicola nick nicky nic
matthew matthias matteo mateo matt
gregory gregor gregorio greg
jeffrey geoffrey jeff geoff
kenneth ken kenny
ronald ron ronnie
donald don donnie
eugene eugen eugenio gene
walter walther gualtiero walt wally
charles carl karl carlos carlo charlie chuck
francis francois francesco francisco franz frank frankie
franklin frank
gerald gerard gerhard gerardo jerry gerry
jerome jerry
leonard leonardo len lenny leo
philip phillip philippe filippo felipe phil
raymond raimund ramon ray
timothy tim timmy
vincent vincenzo vicente vince
abraham abram abe
herbert herb bert
stanley stan
martin martino marty
ernest ernst ernesto ernie
louis ludwig luis luigi lewis lou louie
augustus august augusto auguste gus
maximilian max
emmanuel emanuel manuel manny
paul paolo pablo pavel paulo
peter pierre pietro pedro pyotr piotr petr pete
george georg georges giorgio jorge georgy georgi
clifford cliff
"""
